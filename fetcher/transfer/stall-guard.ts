/** No byte came from the source for too long: the connection is as good as dead. */
export class StallError extends Error {
  override readonly name = 'StallError'
}

/**
 * Rejects with a StallError when `p` has not settled within `timeoutMs`, after calling
 * `onStall` (which aborts the attempt, so the source tears its connection down). With
 * `signal`, also rejects as soon as it aborts. A value `p` brings after either is handed to
 * `onLate` (release it: a stream nobody will read must still be destroyed).
 */
export function guardPromise<T>(
  p: Promise<T>,
  timeoutMs: number,
  what: string,
  onStall: (err: StallError) => void,
  opts: { readonly signal?: AbortSignal; readonly onLate?: (value: T) => void } = {},
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false
    const giveUp = (err: unknown): void => {
      settled = true
      clearTimeout(timer)
      opts.signal?.removeEventListener('abort', onAbort)
      reject(err)
    }
    const onAbort = (): void => giveUp(opts.signal?.reason)
    const timer = setTimeout(() => {
      const err = new StallError(`${what}: no data for ${timeoutMs} ms`)
      onStall(err)
      if (!settled) giveUp(err)
    }, timeoutMs)
    if (opts.signal?.aborted) onAbort()
    else opts.signal?.addEventListener('abort', onAbort, { once: true })
    p.then(
      (v) => {
        if (settled) {
          opts.onLate?.(v)
          return
        }
        settled = true
        clearTimeout(timer)
        opts.signal?.removeEventListener('abort', onAbort)
        resolve(v)
      },
      (e: unknown) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        opts.signal?.removeEventListener('abort', onAbort)
        reject(e)
      },
    )
  })
}

/**
 * Passes `src` through, failing when one `next()` of the source takes longer than
 * `timeoutMs`. Only time spent waiting on the source counts: while the consumer is
 * throttled the clock does not run, so a slow limit never looks like a stalled server.
 */
export async function* stallGuard<T>(
  src: AsyncIterable<T>,
  timeoutMs: number,
  what: string,
  onStall: (err: StallError) => void,
): AsyncGenerator<T> {
  const it = src[Symbol.asyncIterator]()
  let stalled = false
  try {
    for (;;) {
      let r: IteratorResult<T>
      try {
        r = await guardPromise(it.next(), timeoutMs, what, onStall)
      } catch (err) {
        stalled = err instanceof StallError
        throw err
      }
      if (r.done) return
      yield r.value
    }
  } finally {
    // After a stall the pending next() may never settle; onStall already aborted the
    // source, so do not wait on its cleanup.
    if (stalled) void Promise.resolve(it.return?.()).catch(() => undefined)
    else await it.return?.()
  }
}
