import { crc32 } from 'node:zlib'
import { StoreError } from '../../../common/errors'

/**
 * The 64-byte header that starts every .index and .data file (docs/FORMAT.md). Both files
 * of a chunk carry the same 16-byte file id, derived from (store, version, node, chunk),
 * so a chunk file swapped with another chunk's or version's is refused on open.
 */
export const HEADER_SIZE = 64
/**
 * The chunk files' own format version, apart from metadata.json's: format 2 (partition
 * files) names and identifies chunk files differently but keeps their bytes, so both
 * metadata majors read chunk files of major 1.
 */
export const CHUNK_FORMAT_MAJOR = 1
export const CHUNK_FORMAT_MINOR = 0
export const INDEX_MAGIC = Buffer.from('RSTOREIX', 'ascii')
export const DATA_MAGIC = Buffer.from('RSTOREDT', 'ascii')
export const INDEX_ENTRY_SIZE = 16
/** The index blocks a lookup that finds no entry re-checks (native/lookup/index-scan.h, RO_INDEX_BLOCK). */
export const INDEX_BLOCK_BYTES = 4096

export interface IndexHeader {
  readonly fileId: Buffer
  readonly chunk: number
  readonly entryCount: number
  readonly dataSize: number
}

export interface DataHeader {
  readonly fileId: Buffer
  readonly chunk: number
  readonly codec: number
  readonly recordCount: number
}

export function encodeIndexHeader(h: IndexHeader): Buffer {
  const b = Buffer.alloc(HEADER_SIZE)
  INDEX_MAGIC.copy(b, 0)
  writeCommon(b, h.fileId, h.chunk)
  b.writeUInt32LE(INDEX_ENTRY_SIZE, 36)
  writeU64(b, 40, h.entryCount)
  writeU64(b, 48, h.dataSize)
  b.writeUInt32LE(crc32(b.subarray(0, 60)), 60)
  return b
}

export function encodeDataHeader(h: DataHeader): Buffer {
  const b = Buffer.alloc(HEADER_SIZE)
  DATA_MAGIC.copy(b, 0)
  writeCommon(b, h.fileId, h.chunk)
  b.writeUInt32LE(h.codec, 36)
  writeU64(b, 40, h.recordCount)
  b.writeUInt32LE(crc32(b.subarray(0, 60)), 60)
  return b
}

export function decodeIndexHeader(b: Buffer, file: string): IndexHeader {
  checkCommon(b, INDEX_MAGIC, file)
  const entrySize = b.readUInt32LE(36)
  if (entrySize !== INDEX_ENTRY_SIZE) corrupt(file, `index entry size ${entrySize}, expected ${INDEX_ENTRY_SIZE}`)
  return {
    fileId: Buffer.from(b.subarray(16, 32)),
    chunk: b.readUInt32LE(32),
    entryCount: readU64(b, 40, file),
    dataSize: readU64(b, 48, file),
  }
}

export function decodeDataHeader(b: Buffer, file: string): DataHeader {
  checkCommon(b, DATA_MAGIC, file)
  return {
    fileId: Buffer.from(b.subarray(16, 32)),
    chunk: b.readUInt32LE(32),
    codec: b.readUInt32LE(36),
    recordCount: readU64(b, 40, file),
  }
}

function writeCommon(b: Buffer, fileId: Buffer, chunk: number): void {
  b.writeUInt16LE(CHUNK_FORMAT_MAJOR, 8)
  b.writeUInt16LE(CHUNK_FORMAT_MINOR, 10)
  b.writeUInt32LE(HEADER_SIZE, 12)
  if (fileId.length !== 16) throw new RangeError('file id must be 16 bytes')
  fileId.copy(b, 16)
  b.writeUInt32LE(chunk, 32)
}

function checkCommon(b: Buffer, magic: Buffer, file: string): void {
  if (b.length < HEADER_SIZE) throw new StoreError('RO_BAD_FORMAT', `${file}: shorter than the ${HEADER_SIZE}-byte header`)
  if (!b.subarray(0, 8).equals(magic))
    throw new StoreError('RO_BAD_FORMAT', `${file}: not a rostore ${magic.toString('ascii')} file (bad magic)`)
  const major = b.readUInt16LE(8)
  if (major !== CHUNK_FORMAT_MAJOR)
    throw new StoreError(
      'RO_BAD_FORMAT',
      `${file}: chunk file format major version ${major}, this reader understands ${CHUNK_FORMAT_MAJOR}`,
    )
  if (b.readUInt32LE(60) !== crc32(b.subarray(0, 60))) corrupt(file, 'header checksum mismatch')
  if (b.readUInt32LE(12) !== HEADER_SIZE) corrupt(file, `header size ${b.readUInt32LE(12)}`)
}

/** u64 little-endian, refused past 2^53 so offsets stay exact JavaScript numbers. */
export function readU64(b: Buffer, at: number, file: string): number {
  const hi = b.readUInt32LE(at + 4)
  if (hi >= 0x200000) corrupt(file, `64-bit field at byte ${at} exceeds 2^53`)
  return hi * 0x100000000 + b.readUInt32LE(at)
}

export function writeU64(b: Buffer, at: number, v: number): void {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`not a u64: ${v}`)
  b.writeUInt32LE(v % 0x100000000, at)
  b.writeUInt32LE(Math.floor(v / 0x100000000), at + 4)
}

export function corrupt(file: string, reason: string): never {
  throw new StoreError('RO_CORRUPT', `${file}: ${reason}`)
}

/**
 * `codec.decode(stored)`, a failure reported as RO_CORRUPT naming the data file and the
 * value's offset: the record's CRC passed, so the frame was written so (a bad writer), and
 * the operator needs to know which file holds it.
 */
export function decodeIn(
  codec: { readonly name: string; decode(stored: Uint8Array): Buffer },
  stored: Uint8Array,
  file: string,
  offset: number,
): Buffer {
  try {
    return codec.decode(stored)
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err)
    throw new StoreError('RO_CORRUPT', `${file}: the ${codec.name} value at offset ${offset} does not decompress (${why})`, { cause: err })
  }
}
