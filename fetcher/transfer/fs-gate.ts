/**
 * Bounds the file-system calls a fetch makes on its *source* (a mounted build output:
 * NFS, a copied tree). Each such call (realpath, open, fstat, read) runs in one of libuv's
 * few pool threads (UV_THREADPOOL_SIZE, 4 by default) and cannot be interrupted: on a hung
 * NFS mount it blocks its thread until the server answers, and once every pool thread is
 * blocked, nothing else of the node that needs one (its own disk, DNS, zlib, crypto) runs.
 *
 * So every such call goes through a gate: a fetch has a gate of one call at a time, under a
 * node-wide gate that stays below the pool size. A caller that gives up (cancel, stall)
 * is answered at once; the call itself keeps its slot until the kernel returns, so the
 * bound holds for calls that are really stuck, and what it returns late is handed to
 * `onLate` (close the descriptor) instead of being used.
 */

/** Pool threads fetch sources may hold node-wide: half the pool, and always below it when it has more than one thread. */
export function defaultFsCallLimit(poolSize = Number(process.env['UV_THREADPOOL_SIZE']) || 4): number {
  return Math.max(1, Math.min(poolSize - 1, Math.floor(poolSize / 2)))
}

export interface FsGateStats {
  /** Calls holding a slot now (running, or stuck in the kernel). */
  readonly inFlight: number
  /** Of those, calls whose caller gave up: stuck in the kernel, or about to return. */
  readonly abandoned: number
  readonly limit: number
  /** Calls waiting for a slot. */
  readonly waiting: number
}

interface Waiter {
  readonly grant: () => void
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError')
}

export class FsGate {
  private used = 0
  private abandonedCalls = 0
  private readonly queue: Waiter[] = []

  constructor(
    readonly limit: number,
    private readonly parent?: FsGate,
  ) {
    if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}`)
  }

  /** A gate under this one (one per fetch): at most `limit` calls, and within this gate's. */
  child(limit = 1): FsGate {
    return new FsGate(limit, this)
  }

  get stats(): FsGateStats {
    return { inFlight: this.used, abandoned: this.abandonedCalls, limit: this.limit, waiting: this.queue.length }
  }

  /**
   * Runs `op` once a slot is free here and in every gate above. Rejects with the signal's
   * reason as soon as it aborts, whether waiting or running; a call still running then keeps
   * its slots until it returns, and its value goes to `onLate`.
   */
  async run<T>(op: () => Promise<T>, signal: AbortSignal, onLate?: (value: T) => void): Promise<T> {
    const release = await this.acquire(signal)
    let call: Promise<T>
    try {
      call = op()
    } catch (err) {
      release()
      throw err
    }
    return new Promise<T>((resolve, reject) => {
      let abandoned = false
      const onAbort = (): void => {
        abandoned = true
        this.markAbandoned(1)
        reject(abortReason(signal))
      }
      if (signal.aborted) onAbort()
      else signal.addEventListener('abort', onAbort, { once: true })
      call.then(
        (value) => {
          signal.removeEventListener('abort', onAbort)
          if (abandoned) this.markAbandoned(-1)
          release()
          if (!abandoned) resolve(value)
          else if (onLate) {
            try {
              onLate(value)
            } catch {
              // cleaning up a late result is best effort
            }
          }
        },
        (err: unknown) => {
          signal.removeEventListener('abort', onAbort)
          if (abandoned) this.markAbandoned(-1)
          release()
          if (!abandoned) reject(err)
        },
      )
    })
  }

  private markAbandoned(delta: number): void {
    this.abandonedCalls += delta
    this.parent?.markAbandoned(delta)
  }

  /** A slot here, then in the parent; a release function freeing both. */
  private async acquire(signal: AbortSignal): Promise<() => void> {
    await this.take(signal)
    let up: (() => void) | undefined
    try {
      up = await this.parent?.acquire(signal)
    } catch (err) {
      this.free()
      throw err
    }
    let done = false
    return () => {
      if (done) return
      done = true
      up?.()
      this.free()
    }
  }

  private take(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(abortReason(signal))
    if (this.used < this.limit) {
      this.used++
      return Promise.resolve()
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort)
          this.used++
          resolve()
        },
      }
      const onAbort = (): void => {
        const i = this.queue.indexOf(waiter)
        if (i >= 0) this.queue.splice(i, 1)
        reject(abortReason(signal))
      }
      signal.addEventListener('abort', onAbort, { once: true })
      this.queue.push(waiter)
    })
  }

  private free(): void {
    this.used--
    const next = this.queue.shift()
    next?.grant()
  }
}
