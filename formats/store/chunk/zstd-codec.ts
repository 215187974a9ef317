import { StoreError } from '../../../common/errors'
import { logLine, nativeFunctions, nativeUnavailableReason, type NativeFunctions, type ZstdPrepared } from '../../../common/native'
import type * as Fzstd from 'fzstd'
import type { ZstdJs } from './zstd-js'
import { frameContentSize, withFrameMagic } from './zstd-frame'

/**
 * The zstd value codec: one frame per value (its content size in the header), with the
 * version's dictionary prepared once per codec, through the addon's libzstd. Without the
 * addon, frames without a dictionary are read by fzstd (pure JavaScript, slower), and
 * frames with one by libzstd compiled to JavaScript (zstd-js.ts), which the caller loads
 * first; without it such a version is refused rather than misread.
 */
export const ZSTD_CODEC_ID = 3
export const DEFAULT_ZSTD_LEVEL = 3
/** libzstd's own bounds for a compression level (negative levels are its fast modes). */
export const MIN_ZSTD_LEVEL = -7
export const MAX_ZSTD_LEVEL = 22
/** Largest value a frame may declare: a record's length field is 32 bits. */
const MAX_DECODED_BYTES = 0xffffffff

export interface ZstdCodecParts {
  encode(value: Uint8Array): Buffer
  decode(stored: Uint8Array): Buffer
  /** Present where the addon compresses: see ValueCodec.encodeRecords. */
  encodeRecords?(records: RecordRanges, count: number): RecordRanges<Buffer>
}

/** Records as byte ranges of one buffer: a parsed input batch, or its encoded copy. */
export interface RecordRanges<B extends Uint8Array = Uint8Array> {
  readonly buf: B
  readonly keyStart: Uint32Array
  readonly keyEnd: Uint32Array
  readonly valueStart: Uint32Array
  readonly valueEnd: Uint32Array
}

/** The largest frame a value of `size` bytes compresses into (ZSTD_COMPRESSBOUND). */
export function zstdBound(size: number): number {
  return size + (size >>> 8) + (size < 128 << 10 ? ((128 << 10) - size) >>> 11 : 0)
}

/**
 * Encoder and decoder for one dictionary (or none). `encode` needs the addon; a codec
 * made only to read (`forEncode` false) prepares no compression state.
 */
export function zstdParts(dictionary: Uint8Array | undefined, level: number, forEncode: boolean, js?: ZstdJs): ZstdCodecParts {
  const native = nativeFunctions()
  const prepared = native?.zstdPrepare(dictionary ?? null, level, forEncode) ?? null
  if (native && prepared) return nativeParts(native, prepared, forEncode)
  const reason = native ? 'libzstd.so.1 is not loadable' : nativeUnavailableReason()
  if (forEncode) throw new StoreError('RO_BAD_OPTION', `--compression zstd needs the native addon and libzstd: ${reason}`)
  if (dictionary !== undefined) {
    if (js === undefined)
      throw new StoreError(
        'RO_BAD_FORMAT',
        `this version's values are compressed with a zstd dictionary, which needs the native addon or the JavaScript decoder: ${reason}`,
      )
    announceFallback(reason, 'zstd-codec')
    return readOnly(js.decoderFor(dictionary))
  }
  announceFallback(reason, 'fzstd')
  return fallbackParts()
}

function nativeParts(native: NativeFunctions, prepared: ZstdPrepared, forEncode: boolean): ZstdCodecParts {
  let scratch = Buffer.allocUnsafeSlow(64 << 10)
  // A build's batch buffer, made at its first batch (a reader's codec never makes one).
  let encoded: RecordRanges<Buffer> | undefined
  return {
    encodeRecords: (records, count) => {
      if (!forEncode) throw new TypeError('zstd codec prepared for reading only')
      let bytes = 0
      for (let i = 0; i < count; i++) {
        bytes += (records.keyEnd[i] as number) - (records.keyStart[i] as number)
        bytes += zstdBound((records.valueEnd[i] as number) - (records.valueStart[i] as number))
      }
      if (encoded === undefined || encoded.keyStart.length < count || encoded.buf.length < bytes) {
        const buf = encoded === undefined || encoded.buf.length < bytes ? Buffer.allocUnsafeSlow(Math.max(bytes, 1 << 20)) : encoded.buf
        encoded = rangesFor(buf, Math.max(count, encoded?.keyStart.length ?? 4096))
      }
      const { buf, keyStart, keyEnd, valueStart, valueEnd } = encoded
      const r = records
      native.zstdEncodeBatch(
        prepared,
        r.buf,
        r.keyStart,
        r.keyEnd,
        r.valueStart,
        r.valueEnd,
        count,
        buf,
        keyStart,
        keyEnd,
        valueStart,
        valueEnd,
      )
      return encoded
    },
    encode: (value) => {
      if (!forEncode) throw new TypeError('zstd codec prepared for reading only')
      const bound = zstdBound(value.length)
      if (scratch.length < bound) scratch = Buffer.allocUnsafeSlow(bound)
      const n = native.zstdCompress(prepared, value, scratch)
      return Buffer.from(scratch.subarray(0, n))
    },
    decode: (stored) => {
      const size = frameContentSize(stored)
      if (size === undefined || size > MAX_DECODED_BYTES) throw corruptFrame(invalidHeader(native, stored))
      const out = Buffer.allocUnsafe(size)
      let n: number
      try {
        n = native.zstdDecompressWith(prepared, stored, out)
      } catch (err) {
        throw corruptFrame(`does not decompress (${(err as Error).message})`, err)
      }
      if (n !== size) throw corruptFrame(`decompresses to ${n} bytes, its header says ${size}`)
      return out
    },
  }
}

/** Why a frame's header gives no size to decode into (libzstd's reading of it). */
function invalidHeader(native: NativeFunctions, stored: Uint8Array): string {
  const size = native.zstdFrameSize(stored)
  if (size === -1) return 'declares no content size'
  if (size > MAX_DECODED_BYTES) return `declares ${size} bytes, more than a record holds`
  return 'has no valid frame header'
}

function rangesFor(buf: Buffer, count: number): RecordRanges<Buffer> {
  return {
    buf,
    keyStart: new Uint32Array(count),
    keyEnd: new Uint32Array(count),
    valueStart: new Uint32Array(count),
    valueEnd: new Uint32Array(count),
  }
}

let fzstd: typeof Fzstd | undefined

function fallbackParts(): ZstdCodecParts {
  return {
    encode: () => {
      throw new TypeError('zstd codec prepared for reading only')
    },
    decode: (stored) => {
      // Loaded only where the addon is missing: the native path never needs it.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      fzstd ??= require('fzstd') as typeof Fzstd
      try {
        const out = fzstd.decompress(withFrameMagic(stored))
        return Buffer.from(out.buffer, out.byteOffset, out.byteLength)
      } catch (err) {
        throw corruptFrame(`does not decompress (${(err as Error).message})`, err)
      }
    },
  }
}

function corruptFrame(why: string, cause?: unknown): StoreError {
  return new StoreError('RO_CORRUPT', `a zstd value frame ${why}`, { cause })
}

let announced = false

function announceFallback(reason: string, decoder: string): void {
  if (announced) return
  announced = true
  logLine('warn', 'zstd_fallback', { decoder, reason })
}

function readOnly(decode: (stored: Uint8Array) => Buffer): ZstdCodecParts {
  return {
    encode: () => {
      throw new TypeError('zstd codec prepared for reading only')
    },
    decode,
  }
}

/**
 * A dictionary of at most `capacity` bytes trained from `samples`, or undefined when
 * libzstd finds them too few or too small to train on. The same samples in the same order
 * give the same bytes (single-threaded training, fixed parameters).
 */
export function trainZstdDictionary(samples: readonly Uint8Array[], capacity: number): Buffer | undefined {
  const native = nativeFunctions()
  if (!native) throw new StoreError('RO_BAD_OPTION', `a zstd dictionary needs the native addon: ${nativeUnavailableReason()}`)
  const total = samples.reduce((s, v) => s + v.length, 0)
  const joined = Buffer.allocUnsafe(total)
  const sizes = new Uint32Array(samples.length)
  let at = 0
  samples.forEach((v, i) => {
    joined.set(v, at)
    at += v.length
    sizes[i] = v.length
  })
  const dst = Buffer.alloc(capacity)
  let n: number
  try {
    n = native.zstdTrain(joined, sizes, samples.length, dst)
  } catch {
    return undefined
  }
  if (n < 0) throw new StoreError('RO_BAD_OPTION', 'a zstd dictionary needs libzstd.so.1, which does not load')
  return Buffer.from(dst.subarray(0, n))
}
