/**
 * Decoders for compressed Arrow IPC bodies (pyarrow and Arrow C++ write them with
 * `compression="lz4"` or `"zstd"`), registered with apache-arrow, which ships none.
 * apache-arrow calls them synchronously, buffer by buffer: ZSTD goes through fzstd (pure
 * JavaScript), LZ4 frames through the block decoder of the Parquet codecs.
 */
import { compressionRegistry } from 'apache-arrow'
import { CompressionType } from 'apache-arrow/fb/compression-type'
import { decompress as zstdDecompress } from 'fzstd'
import { CodecError, lz4Block } from './parquet/codecs'

const LZ4_FRAME_MAGIC = 0x184d2204
const BLOCK_MAX = [0, 0, 0, 0, 64 << 10, 256 << 10, 1 << 20, 4 << 20]

let registered = false

export function registerArrowCodecs(): void {
  if (registered) return
  registered = true
  compressionRegistry.set(CompressionType.LZ4_FRAME, { decode: lz4Frame })
  compressionRegistry.set(CompressionType.ZSTD, {
    decode: (data) => {
      // apache-arrow views 8-byte values in place: the buffer must start 8-aligned.
      const out = zstdDecompress(data)
      return out.byteOffset % 8 === 0 ? out : out.slice()
    },
  })
}

/** An LZ4 frame (magic, descriptor, blocks, end mark), blocks linked or independent. */
export function lz4Frame(input: Uint8Array): Uint8Array {
  const view = new DataView(input.buffer, input.byteOffset, input.byteLength)
  if (input.length < 7 || view.getUint32(0, true) !== LZ4_FRAME_MAGIC) throw new CodecError('not an LZ4 frame')
  const flags = input[4]!
  const blockMax = BLOCK_MAX[(input[5]! >> 4) & 7] ?? 0
  if (blockMax === 0) throw new CodecError('LZ4 frame with an invalid block size')
  let pos = 6 + ((flags & 0x08) !== 0 ? 8 : 0) + ((flags & 0x01) !== 0 ? 4 : 0) + 1 // + header checksum
  const blockChecksum = (flags & 0x10) !== 0 ? 4 : 0
  // Sizes first, so one output buffer holds every block: linked blocks refer back into it.
  const blocks: Array<[number, number, boolean]> = []
  let bound = 0
  for (;;) {
    if (pos + 4 > input.length) throw new CodecError('LZ4 frame cut short')
    const word = view.getUint32(pos, true)
    pos += 4
    if (word === 0) break
    const size = word & 0x7fffffff
    if (pos + size > input.length) throw new CodecError('LZ4 frame cut short')
    const raw = (word & 0x80000000) !== 0
    blocks.push([pos, size, raw])
    bound += raw ? size : blockMax
    pos += size + blockChecksum
  }
  const out = new Uint8Array(bound)
  let at = 0
  for (const [from, size, raw] of blocks) {
    if (raw) {
      out.set(input.subarray(from, from + size), at)
      at += size
    } else {
      at = lz4Block(input, from, from + size, out, at).length
    }
  }
  return out.subarray(0, at)
}
