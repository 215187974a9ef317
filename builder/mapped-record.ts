import { readU32BE, writeU32BE } from '../common/bytes'

/**
 * The map step's output, one per (record, replica): where it goes and how it sorts.
 * Encoded back to back in memory arenas and in sorted run files:
 *
 *   u32 bucket | 16 B hash | u32 fileIndex | f64 order | f64 line | u32 keyLen | u32 valueLen | key | value
 *
 * `bucket` is (node position × chunks + chunk); `value` is already compressed.
 * The order is the one the index needs (hash, then key) plus the input order, so
 * duplicates sit next to each other oldest first.
 */
export interface MappedRecord {
  readonly bucket: number
  readonly hash: Uint8Array
  readonly fileIndex: number
  /** Position in its file: byte offset for text, row for columnar formats. */
  readonly order: number
  /** Line (text formats) or row (columnar formats), for messages. */
  readonly line: number
  readonly key: Uint8Array
  readonly value: Uint8Array
}

export const MAPPED_HEADER_SIZE = 48

export function mappedSize(r: MappedRecord): number {
  return MAPPED_HEADER_SIZE + r.key.length + r.value.length
}

export function encodeMapped(r: MappedRecord, out: Buffer, at: number): number {
  // Plain byte stores: Buffer's write methods cost a bounds check and a call each.
  writeU32BE(out, at, r.bucket)
  out.set(r.hash, at + 4)
  writeU32BE(out, at + 20, r.fileIndex)
  out.writeDoubleBE(r.order, at + 24)
  out.writeDoubleBE(r.line, at + 32)
  writeU32BE(out, at + 40, r.key.length)
  writeU32BE(out, at + 44, r.value.length)
  out.set(r.key, at + MAPPED_HEADER_SIZE)
  out.set(r.value, at + MAPPED_HEADER_SIZE + r.key.length)
  return at + MAPPED_HEADER_SIZE + r.key.length + r.value.length
}

/** Total size of the encoded record starting at `at`, or -1 if `buf` does not hold its header. */
export function encodedSizeAt(buf: Buffer, at: number, end: number): number {
  if (end - at < MAPPED_HEADER_SIZE) return -1
  return MAPPED_HEADER_SIZE + readU32BE(buf, at + 40) + readU32BE(buf, at + 44)
}

/** Views into `buf`: valid until the buffer is reused. */
export function decodeMapped(buf: Buffer, at: number): MappedRecord {
  const keyLen = readU32BE(buf, at + 40)
  const valueLen = readU32BE(buf, at + 44)
  const k = at + MAPPED_HEADER_SIZE
  return {
    bucket: readU32BE(buf, at),
    hash: buf.subarray(at + 4, at + 20),
    fileIndex: readU32BE(buf, at + 20),
    order: buf.readDoubleBE(at + 24),
    line: buf.readDoubleBE(at + 32),
    key: buf.subarray(k, k + keyLen),
    value: buf.subarray(k + keyLen, k + keyLen + valueLen),
  }
}

/** Total order: bucket, hash, key, then input position (file, order). */
export function compareMapped(a: MappedRecord, b: MappedRecord): number {
  if (a.bucket !== b.bucket) return a.bucket - b.bucket
  return compareWithinBucket(a, b)
}

export function compareWithinBucket(a: MappedRecord, b: MappedRecord): number {
  const h = Buffer.compare(a.hash, b.hash)
  if (h !== 0) return h
  const k = Buffer.compare(a.key, b.key)
  if (k !== 0) return k
  return a.fileIndex - b.fileIndex || a.order - b.order
}

export function sameKey(a: MappedRecord, b: MappedRecord): boolean {
  return Buffer.compare(a.hash, b.hash) === 0 && Buffer.compare(a.key, b.key) === 0
}
