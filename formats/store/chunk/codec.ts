import { gunzipSync, gzipSync, constants } from 'node:zlib'
import { compressSync, uncompressSync } from 'snappy'
import { StoreError } from '../../../common/errors'
import { nativeFunctions } from '../../../common/native'
import type { Compression } from '../layout/metadata'
import { DEFAULT_ZSTD_LEVEL, ZSTD_CODEC_ID, zstdParts, type RecordRanges } from './zstd-codec'
import type { ZstdJs } from './zstd-js'
import { frameContentSize } from './zstd-frame'

/**
 * Value codecs, applied per value so a lookup decompresses only what it returns.
 * gzip (node:zlib) compresses better; snappy is the fast codec; zstd (zstd-codec.ts) with
 * the version's trained dictionary compresses short, alike values best. Codec ids are
 * written in every data file header and never renumbered.
 */
export interface ValueCodec {
  readonly name: Compression
  readonly id: number
  encode(value: Uint8Array): Buffer
  decode(stored: Uint8Array): Buffer
  /**
   * The first `count` records with their keys copied and their values encoded (as `encode`
   * would) into one buffer, in one call for them all: a build's map step. The result's
   * buffers are the codec's own and are reused by its next call. Codecs without it encode
   * per value.
   */
  encodeRecords?(records: RecordRanges, count: number): RecordRanges<Buffer>
  /** zstd with a dictionary: the dictionary's bytes (a reader hands them to clients that decompress themselves). */
  readonly dictionary?: Buffer
}

const asBuffer = (v: Uint8Array): Buffer => (Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength))

const none: ValueCodec = { name: 'none', id: 0, encode: asBuffer, decode: asBuffer }

const gzip: ValueCodec = {
  name: 'gzip',
  id: 1,
  encode: (v) => gzipSync(v, { level: constants.Z_DEFAULT_COMPRESSION }),
  decode: (s) => gunzipSync(s),
}

const snappy: ValueCodec = {
  name: 'snappy',
  id: 2,
  encode: (v) => compressSync(asBuffer(v)),
  decode: (s) => decodeSnappy(s),
}

/**
 * Snappy values are decoded by the addon (native/io/snappy.c) in one call: the snappy
 * package's binding costs several times the decoding itself on values of a few hundred
 * bytes. The package decodes where the addon is not loaded.
 */
function decodeSnappy(stored: Uint8Array): Buffer {
  const native = nativeFunctions()
  if (native === undefined) {
    try {
      return uncompressSync(asBuffer(stored), { asBuffer: true }) as Buffer
    } catch (err) {
      throw new StoreError('RO_CORRUPT', `a snappy value does not decompress (${(err as Error).message})`, { cause: err })
    }
  }
  const length = snappyLength(stored)
  const out = length < 0 ? undefined : Buffer.allocUnsafe(length)
  if (out === undefined || native.snappyDecode(stored, out) !== 0) throw new StoreError('RO_CORRUPT', 'a snappy value does not decompress')
  return out
}

/** The uncompressed length a snappy block's preamble declares (a varint of at most 32 bits), or -1. */
function snappyLength(stored: Uint8Array): number {
  let length = 0
  for (let i = 0; i < 5 && i < stored.length; i++) {
    const b = stored[i] as number
    length += (b & 0x7f) * 2 ** (7 * i)
    if (b < 0x80) return length <= 0xffffffff ? length : -1
  }
  return -1
}

const CODECS: readonly ValueCodec[] = [none, gzip, snappy]

/**
 * `codec.decode(stored)` for a reader that bounds its memory (a client decompressing values
 * a node sent as stored): a value whose header declares more than `maxBytes` (zstd's
 * frame content size, snappy's preamble) is refused before anything is allocated, a gzip
 * member is inflated at most that far; RO_TOO_LARGE, as a node refuses a value larger than
 * its response limit. A few bytes can declare gigabytes: the node checked the record's CRC,
 * not what the frame says it decompresses to.
 */
export function decodeAtMost(codec: ValueCodec, stored: Uint8Array, maxBytes: number): Buffer {
  const declared = declaredSize(codec.name, stored)
  if (declared !== undefined && declared > maxBytes) throw tooLarge(declared, maxBytes)
  if (codec.name === 'gzip') {
    try {
      return gunzipSync(stored, { maxOutputLength: Math.max(1, maxBytes) })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(undefined, maxBytes)
      throw err
    }
  }
  const out = codec.decode(stored)
  if (out.length > maxBytes) throw tooLarge(out.length, maxBytes)
  return out
}

/** The size a value's header says it decompresses to; undefined where the format does not say (gzip) or the header is bad. */
function declaredSize(name: Compression, stored: Uint8Array): number | undefined {
  switch (name) {
    case 'none':
      return stored.length
    case 'snappy': {
      const n = snappyLength(stored)
      return n < 0 ? undefined : n
    }
    case 'zstd':
      return frameContentSize(stored)
    case 'gzip':
      return undefined
  }
}

function tooLarge(bytes: number | undefined, maxBytes: number): StoreError {
  const size = bytes === undefined ? '' : ` (${bytes} bytes)`
  return new StoreError('RO_TOO_LARGE', `a value decompresses to more than the limit of ${maxBytes} bytes${size}`)
}

/** What a zstd codec needs besides its name; ignored by the others. */
export interface CodecOptions {
  /** The version's dictionary; absent: plain zstd. */
  readonly dictionary?: Uint8Array
  /** Compression level (default 3). */
  readonly level?: number
  /** Prepare compression state too (a build); false: decode only (readers). */
  readonly forEncode?: boolean
  /** The JavaScript decoder, loaded by the caller, for a dictionary where the addon is missing. */
  readonly js?: ZstdJs
}

/** A codec by name; zstd is made for `opts` (each call prepares its own dictionary). */
export function createCodec(name: Compression, opts: CodecOptions = {}): ValueCodec {
  if (name !== 'zstd') return codecByName(name)
  const parts = zstdParts(opts.dictionary, opts.level ?? DEFAULT_ZSTD_LEVEL, opts.forEncode ?? false, opts.js)
  const dictionary = opts.dictionary === undefined ? {} : { dictionary: asBuffer(opts.dictionary) }
  return { name: 'zstd', id: ZSTD_CODEC_ID, ...parts, ...dictionary }
}

/** A codec without options: none, gzip, snappy, or zstd without a dictionary (decode only). */
export function codecByName(name: Compression): ValueCodec {
  if (name === 'zstd') return createCodec('zstd')
  const c = CODECS.find((x) => x.name === name)
  if (!c) throw new RangeError(`unknown compression ${String(name)}`)
  return c
}
