import type { FileHasher } from '../../formats/store/chunk/checksum'

/**
 * Passes `src` through unchanged while feeding every byte to `hasher`, so a download is
 * verified without reading the file again. The caller keeps the hasher and calls
 * `digest()` after the stream ended; `onBytes` counts what went by (progress, metrics).
 */
export async function* checksumStream(
  src: AsyncIterable<Buffer>,
  hasher: FileHasher,
  onBytes?: (n: number) => void,
): AsyncGenerator<Buffer> {
  const it = src[Symbol.asyncIterator]()
  try {
    for (;;) {
      const r = await it.next()
      if (r.done) return
      hasher.update(r.value)
      onBytes?.(r.value.length)
      yield r.value
    }
  } finally {
    await it.return?.()
  }
}
