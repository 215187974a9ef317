import type { TokenBucket } from './token-bucket'

/** Largest piece let through at once: keeps a 1 MiB read from a fast disk from being one
 *  big burst, while pieces stay large enough that the timer count stays low. */
const MAX_PIECE = 256 << 10

/**
 * Lets `src` through no faster than `bucket` allows. Buffers larger than the bucket's
 * burst are split (views, no copies) so that each wait is short. Compose for several
 * limits: `throttle(throttle(s, ownLimit), nodeWide)`.
 */
export async function* throttle(src: AsyncIterable<Buffer>, bucket: TokenBucket, signal?: AbortSignal): AsyncGenerator<Buffer> {
  const it = src[Symbol.asyncIterator]()
  try {
    for (;;) {
      const r = await it.next()
      if (r.done) return
      const buf = r.value
      const piece = Math.max(1, Math.min(MAX_PIECE, bucket.burstBytes))
      for (let at = 0; at < buf.length; at += piece) {
        const part = at === 0 && buf.length <= piece ? buf : buf.subarray(at, Math.min(buf.length, at + piece))
        await bucket.take(part.length, signal)
        yield part
      }
    }
  } finally {
    // Early exit (error downstream, abort, break): let the source close its handles.
    await it.return?.()
  }
}
