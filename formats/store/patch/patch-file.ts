import { crc32 } from '../../../common/crc32'
import { StoreError } from '../../../common/errors'
import { readU64, writeU64 } from '../chunk/header'

/**
 * A partition patch (docs/FORMAT.md, "Partition patches"): what turns partition P of a base
 * version into partition P of a newer one. A 64-byte header, then a compressed body (zstd
 * frames, or gzip members where the builder had no libzstd) of operations in the
 * partition's record order (chunk, then key hash, then key), at most one per key:
 *
 *   u8 op (1 put, 2 delete) | u32le key length | key | put only: u32le value length | stored value
 *
 * Values are stored bytes (already compressed by the store's codec), so a node applying the
 * patch writes them as the builder did, and its files come out byte-identical.
 */
export const PATCH_MAGIC = Buffer.from('RSTOREPT', 'ascii')
export const PATCH_FORMAT_MAJOR = 1
/** Minor 1 added the body codec (bytes 20-23); minor 0 wrote zero there, which is gzip. */
export const PATCH_FORMAT_MINOR = 1
export const PATCH_HEADER_SIZE = 64

/**
 * How the body is compressed. zstd level 1 compresses a build's patch blocks ~8× faster
 * than gzip level 1 at the same ratio (bench 4k's `--base` build time was gzip's), so the
 * builder writes it wherever the addon's libzstd loads; gzip stays for builders without.
 */
export const PATCH_CODECS = ['gzip', 'zstd'] as const
export type PatchCodec = (typeof PATCH_CODECS)[number]

export const PATCH_PUT = 1
export const PATCH_DELETE = 2

/**
 * A patch larger than this share of its partition's full files is not written: fetching
 * the files costs about as much, and they need no rebuild.
 */
export const PATCH_MAX_SHARE = 0.5

export function patchFileName(partition: number): string {
  return `p${partition}.patch`
}

const PATCH_FILE = /^p(0|[1-9][0-9]{0,8})\.patch$/

/** The partition a patch file name stands for, or undefined for any other name. */
export function parsePatchFileName(name: string): number | undefined {
  const m = PATCH_FILE.exec(name)
  return m ? Number(m[1]) : undefined
}

export interface PatchHeader {
  readonly partition: number
  readonly chunks: number
  /** dataVersion of the base partition files the patch applies to. */
  readonly baseDataVersion: number
  /** dataVersion of the files it makes. */
  readonly dataVersion: number
  readonly ops: number
  readonly codec: PatchCodec
  /** Bytes of the compressed body after the header. */
  readonly bodySize: number
  /** CRC-32 of the body bytes as stored. */
  readonly bodyCrc: number
}

/**
 *   0  8 magic "RSTOREPT"        24 8 u64le base dataVersion    48 8 u64le body size
 *   8  2 u16le major (1)         32 8 u64le dataVersion         56 4 u32le CRC-32 of the body
 *  10  2 u16le minor (1)         40 8 u64le operations          60 4 u32le CRC-32 of bytes 0-59
 *  12  4 u32le partition
 *  16  4 u32le chunks
 *  20  4 u32le body codec (0 gzip, 1 zstd)
 */
export function encodePatchHeader(h: PatchHeader): Buffer {
  const b = Buffer.alloc(PATCH_HEADER_SIZE)
  PATCH_MAGIC.copy(b, 0)
  b.writeUInt16LE(PATCH_FORMAT_MAJOR, 8)
  b.writeUInt16LE(PATCH_FORMAT_MINOR, 10)
  b.writeUInt32LE(h.partition, 12)
  b.writeUInt32LE(h.chunks, 16)
  b.writeUInt32LE(PATCH_CODECS.indexOf(h.codec), 20)
  writeU64(b, 24, h.baseDataVersion)
  writeU64(b, 32, h.dataVersion)
  writeU64(b, 40, h.ops)
  writeU64(b, 48, h.bodySize)
  b.writeUInt32LE(h.bodyCrc >>> 0, 56)
  b.writeUInt32LE(crc32(b.subarray(0, 60), 0) >>> 0, 60)
  return b
}

/** Checks magic, version and the header's own CRC before any field is trusted. */
export function decodePatchHeader(b: Buffer, file: string): PatchHeader {
  if (b.length < PATCH_HEADER_SIZE || !b.subarray(0, 8).equals(PATCH_MAGIC))
    throw new StoreError('RO_BAD_FORMAT', `${file}: not a rostore patch`)
  const major = b.readUInt16LE(8)
  if (major !== PATCH_FORMAT_MAJOR)
    throw new StoreError('RO_BAD_FORMAT', `${file}: patch format ${major}, this version reads ${PATCH_FORMAT_MAJOR}`)
  if (b.readUInt32LE(60) !== crc32(b.subarray(0, 60), 0) >>> 0)
    throw new StoreError('RO_CORRUPT', `${file}: patch header fails its checksum`)
  const codec = PATCH_CODECS[b.readUInt32LE(20)]
  if (codec === undefined)
    throw new StoreError('RO_BAD_FORMAT', `${file}: patch body codec ${b.readUInt32LE(20)} is not one this version reads`)
  // readU64 refuses values past 2^53 (the file is corrupt, not just large).
  return {
    codec,
    partition: b.readUInt32LE(12),
    chunks: b.readUInt32LE(16),
    baseDataVersion: readU64(b, 24, file),
    dataVersion: readU64(b, 32, file),
    ops: readU64(b, 40, file),
    bodySize: readU64(b, 48, file),
    bodyCrc: b.readUInt32LE(56),
  }
}

/** One operation's bytes (the body before compression). */
export function encodePatchOp(op: typeof PATCH_PUT | typeof PATCH_DELETE, key: Uint8Array, value?: Uint8Array): Buffer {
  const valueBytes = op === PATCH_PUT ? 4 + (value?.length ?? 0) : 0
  const b = Buffer.allocUnsafe(5 + key.length + valueBytes)
  b[0] = op
  b.writeUInt32LE(key.length, 1)
  b.set(key, 5)
  if (op === PATCH_PUT) {
    b.writeUInt32LE(value?.length ?? 0, 5 + key.length)
    if (value !== undefined) b.set(value, 9 + key.length)
  }
  return b
}
