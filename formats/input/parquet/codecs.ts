/**
 * Page decompression for every codec writers use. Native code where Node has it: snappy
 * through the `snappy` addon, GZIP and BROTLI through node:zlib, ZSTD through the system's
 * libzstd in rostore's addon where it is found, else `@mongodb-js/zstd` (prebuilt like
 * `snappy`; node:zlib has no zstd before Node 22.15).
 * Its API is asynchronous (libuv's thread pool), so `decompressAsync` is the one the page
 * reader uses. The synchronous `decompress` serves hyparquet's nested-column assembly,
 * with fzstd (pure JavaScript, slower) for ZSTD. The small LZ4 block decoder
 * below reads LZ4_RAW and the old LZ4 codec. LZO is refused by the caller.
 */
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import type * as MongoZstd from '@mongodb-js/zstd'
import type * as Fzstd from 'fzstd'
import type * as Snappy from 'snappy'
import { nativeFunctions } from '../../../common/native'
import type { ScratchBuffer } from '../../../common/working-memory'

export const SUPPORTED_CODECS = ['UNCOMPRESSED', 'SNAPPY', 'GZIP', 'ZSTD', 'LZ4_RAW', 'LZ4', 'BROTLI'] as const
export type Codec = (typeof SUPPORTED_CODECS)[number]

export function isSupportedCodec(codec: string): codec is Codec {
  return (SUPPORTED_CODECS as readonly string[]).includes(codec)
}

// Each codec's library is loaded when a page first needs it: every build worker thread
// loads this module, most files use one codec, and each library costs CPU to load.
/* eslint-disable @typescript-eslint/no-require-imports */
let snappyLib: typeof Snappy | undefined
let fzstdLib: typeof Fzstd | undefined
let mongoZstdLib: typeof MongoZstd | undefined
const snappyUncompress = (input: Uint8Array): Buffer =>
  (snappyLib ??= require('snappy') as typeof Snappy).uncompressSync(input as Buffer, { asBuffer: true }) as Buffer
const zstdDecompress = (input: Uint8Array, out?: Uint8Array): Uint8Array =>
  (fzstdLib ??= require('fzstd') as typeof Fzstd).decompress(input, out)
const zstdNative = (input: Buffer): Promise<Buffer> => (mongoZstdLib ??= require('@mongodb-js/zstd') as typeof MongoZstd).decompress(input)
/* eslint-enable @typescript-eslint/no-require-imports */

/** A codec's failure or a size that differs from the page header's. */
export class CodecError extends Error {
  override readonly name = 'CodecError'
}

/** The `size` bytes `input` decompresses to. */
export function decompress(codec: Codec, input: Uint8Array, size: number): Uint8Array {
  let out: Uint8Array
  try {
    out = run(codec, input, size)
  } catch (err) {
    if (err instanceof CodecError) throw err
    throw new CodecError(`${codec} data does not decompress: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
  }
  if (out.length !== size) throw new CodecError(`${codec} data decompresses to ${out.length} bytes, the page header says ${size}`)
  return out
}

/**
 * ZSTD into a buffer of the page's size: the addon's call into the system's libzstd (no
 * growing output, no copy), or undefined where that is not available.
 */
function zstdInto(input: Uint8Array, size: number, output?: ScratchBuffer): Uint8Array | undefined {
  const native = nativeFunctions()
  if (native === undefined) return undefined
  const out = output !== undefined ? output.take(size) : Buffer.allocUnsafe(size)
  let n: number
  try {
    n = native.zstdDecompress(input, out)
  } catch (err) {
    throw new CodecError(`ZSTD data does not decompress: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
  }
  if (n < 0) return undefined
  if (n !== size) throw new CodecError(`ZSTD data decompresses to ${n} bytes, the page header says ${size}`)
  return out
}

/** The addon's zstdDecompress in JavaScript (fzstd): the same result, for tests and ROSTORE_NATIVE=0. */
export function zstdDecompressJs(src: Uint8Array, dst: Uint8Array): number {
  // Without an output buffer fzstd reads every frame; given one, it would stop silently at its end.
  const out = zstdDecompress(src)
  if (out.length > dst.length) throw new CodecError(`ZSTD data decompresses to more than ${dst.length} bytes`)
  dst.set(out)
  return out.length
}

/**
 * As `decompress`, with ZSTD in the addon (libzstd), else on a native thread
 * (@mongodb-js/zstd). Given `output`, the addon's ZSTD decompresses into it (no fresh
 * memory per page); the other codecs may ignore it, so callers use the returned bytes.
 */
export async function decompressAsync(codec: Codec, input: Uint8Array, size: number, output?: ScratchBuffer): Promise<Uint8Array> {
  if (codec !== 'ZSTD') return decompress(codec, input, size)
  const direct = zstdInto(input, size, output)
  if (direct !== undefined) return direct
  let out: Uint8Array
  try {
    out = await zstdNative(Buffer.isBuffer(input) ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength))
  } catch (err) {
    throw new CodecError(`ZSTD data does not decompress: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
  }
  if (out.length !== size) throw new CodecError(`ZSTD data decompresses to ${out.length} bytes, the page header says ${size}`)
  return out
}

function run(codec: Codec, input: Uint8Array, size: number): Uint8Array {
  switch (codec) {
    case 'UNCOMPRESSED':
      return input
    case 'SNAPPY':
      return snappyUncompress(input)
    case 'GZIP':
      // Several concatenated gzip members are one stream to gunzip, as the spec allows.
      return gunzipSync(input, { maxOutputLength: Math.max(size, 1) })
    case 'BROTLI':
      return brotliDecompressSync(input, { maxOutputLength: Math.max(size, 1) })
    case 'ZSTD':
      return zstdDecompress(input, new Uint8Array(size))
    case 'LZ4_RAW':
      return lz4Block(input, 0, input.length, new Uint8Array(size), 0)
    case 'LZ4':
      return lz4Legacy(input, size)
  }
}

/**
 * The deprecated LZ4 codec: parquet-mr wrote Hadoop's framing (per block: big-endian
 * uncompressed and compressed sizes, then an LZ4 block); some writers wrote a bare block.
 * The framing is tried first, as Arrow C++ does, and a bare block when it does not fit.
 */
function lz4Legacy(input: Uint8Array, size: number): Uint8Array {
  const out = new Uint8Array(size)
  const view = new DataView(input.buffer, input.byteOffset, input.byteLength)
  let src = 0
  let dst = 0
  try {
    while (src + 8 <= input.length) {
      const raw = view.getUint32(src)
      const packed = view.getUint32(src + 4)
      if (src + 8 + packed > input.length || dst + raw > size) throw new CodecError('not Hadoop framing')
      if (lz4Block(input, src + 8, src + 8 + packed, out, dst).length !== dst + raw) throw new CodecError('not Hadoop framing')
      src += 8 + packed
      dst += raw
    }
    if (src === input.length && dst === size) return out
  } catch {
    // not framed: fall through to a bare block
  }
  return lz4Block(input, 0, input.length, out, 0)
}

/** Decodes the LZ4 block input[from, to) into out at `at`; returns out cut to what was written. */
export function lz4Block(input: Uint8Array, from: number, to: number, out: Uint8Array, at: number): Uint8Array {
  let src = from
  let dst = at
  const bad = (): never => {
    throw new CodecError('corrupt LZ4 block')
  }
  while (src < to) {
    const token = input[src++]!
    let literals = token >>> 4
    if (literals === 15) {
      let b = 255
      while (b === 255) {
        if (src >= to) bad()
        b = input[src++]!
        literals += b
      }
    }
    if (src + literals > to || dst + literals > out.length) bad()
    out.set(input.subarray(src, src + literals), dst)
    src += literals
    dst += literals
    if (src >= to) break // the last sequence has literals only
    if (src + 2 > to) bad()
    const offset = input[src]! | (input[src + 1]! << 8)
    src += 2
    if (offset === 0 || offset > dst) bad()
    let length = (token & 15) + 4
    if ((token & 15) === 15) {
      let b = 255
      while (b === 255) {
        if (src >= to) bad()
        b = input[src++]!
        length += b
      }
    }
    if (dst + length > out.length) bad()
    // Byte by byte: a match may overlap the bytes it produces.
    let from2 = dst - offset
    if (offset >= length) {
      out.copyWithin(dst, from2, from2 + length)
      dst += length
    } else {
      for (let k = 0; k < length; k++) out[dst++] = out[from2++]!
    }
  }
  return out.subarray(0, dst)
}
