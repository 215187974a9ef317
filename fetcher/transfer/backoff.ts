import { StoreError } from '../../common/errors'

export interface BackoffPolicy {
  /** Delay before the first retry; doubles each time. */
  readonly baseMs: number
  readonly maxMs: number
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 200, maxMs: 5000 }

/** Delay before retry number `retry` (1-based). Up to 20% jitter so the downloads of a
 *  node, all cut by the same server restart, do not knock again in lockstep. */
export function backoffDelay(retry: number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  const plain = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, retry - 1))
  return Math.round(plain * (0.8 + Math.random() * 0.2))
}

/** setTimeout that rejects with RO_ABORTED as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(new StoreError('RO_ABORTED', 'aborted'))
      return
    }
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(new StoreError('RO_ABORTED', 'aborted'))
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
