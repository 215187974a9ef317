import { crc32 } from 'node:zlib'
import { crc32 as crc32Js } from '../../../common/crc32'

/**
 * One data record: u32 key length, u32 stored value length, u32 CRC-32 of key and stored
 * value, key bytes, stored value bytes (all little-endian). The key is kept so hash
 * collisions are resolved by comparing keys; the CRC turns a flipped bit into an error
 * instead of a wrong value.
 */
export const RECORD_HEADER_SIZE = 12
/** Values are bounded by the u32 length field. */
export const MAX_STORED_VALUE_BYTES = 0xffffffff

export function recordSize(keyLength: number, valueLength: number): number {
  return RECORD_HEADER_SIZE + keyLength + valueLength
}

/** Writes the record header for `key` and `value` into `out` at `at`. */
export function writeRecordHeader(out: Buffer, at: number, key: Uint8Array, value: Uint8Array): void {
  out.writeUInt32LE(key.length, at)
  out.writeUInt32LE(value.length, at + 4)
  out.writeUInt32LE(recordCrc(key, value), at + 8)
}

/** Records up to this many bytes (key + value) are checked with common/crc32.ts, longer ones with zlib. */
const SHORT_RECORD_BYTES = 256

/**
 * CRC-32 of a record's key and stored value. A call into zlib costs more than the
 * arithmetic on short records, where the JavaScript tables win; zlib's vectorised code
 * wins on long ones (RESULTS section 2, building blocks).
 */
export function recordCrc(key: Uint8Array, value: Uint8Array): number {
  if (key.length + value.length <= SHORT_RECORD_BYTES) return crc32Js(value, crc32Js(key, 0))
  // zlib's crc32() over a NULL pointer (an empty view of an empty ArrayBuffer) resets the
  // checksum to 0 instead of leaving it unchanged, so empty parts are skipped here.
  const k = key.length === 0 ? 0 : crc32(key)
  return value.length === 0 ? k : crc32(value, k)
}
