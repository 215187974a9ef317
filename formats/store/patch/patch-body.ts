import type { Readable } from 'node:stream'
import { constants, createGunzip, gzipSync } from 'node:zlib'
import { crc32 } from '../../../common/crc32'
import { StoreError } from '../../../common/errors'
import { nativeFunctions } from '../../../common/native'
import { zstdParts } from '../chunk/zstd-codec'
import type { PatchCodec } from './patch-file'

/**
 * A patch body's compression (docs/FORMAT.md, "Partition patches"): the writer hands over
 * blocks of about 1 MiB of operations and gets the bytes to append; the reader gets the
 * operations' bytes back block by block. gzip: one member per block (a gzip reader inflates
 * concatenated members as one stream). zstd: per block, u32le frame length, then one
 * frame (level 1, content size declared, magic number dropped as in stored values).
 */
export const PATCH_ZSTD_LEVEL = 1

export interface BlockCompressor {
  readonly codec: PatchCodec
  /** The bytes to append to the body for one block of operations. */
  compress(block: Buffer): Buffer
}

/** The compressor for `codec`; without one, zstd where the addon's libzstd loads, else gzip. */
export function blockCompressor(codec?: PatchCodec): BlockCompressor {
  const chosen = codec ?? (nativeFunctions()?.zstdPrepare(null, PATCH_ZSTD_LEVEL, false) ? 'zstd' : 'gzip')
  if (chosen === 'gzip') return { codec: chosen, compress: (block) => gzipSync(block, { level: constants.Z_BEST_SPEED }) }
  const zstd = zstdParts(undefined, PATCH_ZSTD_LEVEL, true)
  return {
    codec: chosen,
    compress: (block) => {
      const frame = zstd.encode(block)
      const out = Buffer.allocUnsafe(4 + frame.length)
      out.writeUInt32LE(frame.length, 0)
      frame.copy(out, 4)
      return out
    },
  }
}

/** The running CRC-32 of the body bytes as read, for the caller to compare once the body ends. */
export interface BodyCrc {
  value: number
}

/**
 * The operations' bytes of a body read from `raw`, block by block, its CRC kept in `crc`.
 * A zstd body that does not decompress throws RO_CORRUPT naming the patch (`name`); zlib's
 * errors of a gzip body are the caller's to name.
 */
export function inflateBody(raw: Readable, codec: PatchCodec, crc: BodyCrc, bodySize: number, name: string): AsyncIterable<Buffer> {
  if (codec === 'gzip') {
    raw.on('data', (b: string | Buffer) => {
      if (typeof b !== 'string') crc.value = crc32(b, crc.value)
    })
    const inflated = raw.pipe(createGunzip())
    raw.on('error', (err) => inflated.destroy(err))
    return inflated
  }
  return zstdBlocks(raw, crc, bodySize, name)
}

async function* zstdBlocks(raw: Readable, crc: BodyCrc, bodySize: number, name: string): AsyncGenerator<Buffer> {
  const zstd = zstdParts(undefined, PATCH_ZSTD_LEVEL, false)
  const corrupt = (msg: string, cause?: unknown): StoreError => new StoreError('RO_CORRUPT', `${name}: ${msg}`, { cause })
  // Chunks are kept as a list and joined once the next block is all there (`need` bytes):
  // a block spans many chunks, and joining at every chunk would copy it over and over.
  let parts: Buffer[] = []
  let held = 0
  let need = 4
  /** Body bytes before parts[0]. */
  let passed = 0
  for await (const chunk of raw as AsyncIterable<Buffer>) {
    crc.value = crc32(chunk, crc.value)
    parts.push(chunk)
    held += chunk.length
    if (held < need) continue
    const pending = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, held)
    let at = 0
    for (;;) {
      if (pending.length - at < 4) {
        need = 4
        break
      }
      const end = at + 4 + pending.readUInt32LE(at)
      // A length past the body's end is damage: fail now rather than hold the rest of the body.
      if (passed + end > bodySize) throw corrupt(`a zstd block at body byte ${passed + at} runs past the body's end`)
      if (pending.length < end) {
        need = end - at
        break
      }
      let block: Buffer
      try {
        block = zstd.decode(pending.subarray(at + 4, end))
      } catch (err) {
        throw corrupt(`the patch body does not inflate (${(err as Error).message})`, err)
      }
      yield block
      at = end
    }
    parts = at === pending.length ? [] : [pending.subarray(at)]
    held = pending.length - at
    passed += at
  }
  if (held > 0) throw corrupt(`the body ends inside a zstd block (${held} bytes left)`)
}
