import { StoreError } from '../../../common/errors'
import type { WorkerHandle } from './worker-handle'

/**
 * Runs `fn` over `items` with one item in flight per worker; the first failure wins, and is
 * thrown once every item in flight has settled: a worker still writing a chunk into the
 * temp output would otherwise race its removal and leave files behind.
 */
export async function drain<T>(
  workers: readonly WorkerHandle[],
  items: readonly T[],
  signal: AbortSignal | undefined,
  fn: (w: WorkerHandle, item: T) => Promise<void>,
): Promise<void> {
  let next = 0
  let first: { err: unknown } | undefined
  await Promise.all(
    workers.map(async (w) => {
      while (first === undefined && next < items.length) {
        if (signal?.aborted) {
          first ??= { err: new StoreError('RO_ABORTED', 'build cancelled') }
          return
        }
        const item = items[next++] as T
        try {
          await fn(w, item)
        } catch (err) {
          first ??= { err }
        }
      }
    }),
  )
  if (first !== undefined) throw first.err
}
