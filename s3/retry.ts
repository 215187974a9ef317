import { StoreError } from '../common/errors'
import { S3Error } from './s3-error'

export interface RetryPolicy {
  /** Attempts after the first; default 5. */
  readonly retries?: number
  /** First pause, doubling up to 5 s; default 200 ms. */
  readonly baseMs?: number
  readonly signal?: AbortSignal
}

/** Whether an S3 call that failed this way may succeed when asked again. */
export function isTransient(err: unknown): boolean {
  if (err instanceof S3Error) return err.transient
  if (err instanceof StoreError) return false
  // Connection errors (reset, refused, timed out, a cut body) are Node's own errors.
  return err instanceof Error && err.name !== 'AbortError'
}

/**
 * Runs `call` until it succeeds, a permanent failure, or `retries` transient ones in a
 * row, pausing 200 ms doubling to 5 s (with jitter) between attempts. For the calls of
 * build inputs and outputs; the fetch job has its own policy.
 */
export async function withRetries<T>(call: () => Promise<T>, policy: RetryPolicy = {}): Promise<T> {
  const retries = policy.retries ?? 5
  for (let attempt = 0; ; attempt++) {
    try {
      return await call()
    } catch (err) {
      policy.signal?.throwIfAborted()
      if (attempt >= retries || !isTransient(err)) throw err
      const plain = Math.min(5000, (policy.baseMs ?? 200) * 2 ** attempt)
      await pause(Math.round(plain * (0.8 + Math.random() * 0.2)), policy.signal)
    }
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason as Error)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
