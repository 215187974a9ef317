import { StoreError } from '../../common/errors'

const MIN_BURST = 64 << 10

/**
 * Byte-rate limiter shared by every download of a node (one per node, so concurrent
 * fetches of several stores together stay under the limit that protects live serving).
 *
 * Takers may drive the balance negative: each `take` reserves its bytes at once and waits
 * until the refill has paid the debt back. That keeps waiters in arrival order without a
 * queue, and since the balance is computed from the wall clock, late timers do not lose
 * rate – they only make the next taker wait less. Bursts stay small (rate/20, at least
 * 64 KiB) so the disk and network see a smooth stream, not second-long spikes.
 */
export class TokenBucket {
  private rate: number
  private burst: number
  private tokens: number
  private last: number

  constructor(bytesPerSec: number, burstBytes?: number) {
    TokenBucket.check(bytesPerSec, burstBytes)
    this.rate = bytesPerSec
    this.burst = burstBytes ?? TokenBucket.defaultBurst(bytesPerSec)
    this.tokens = this.burst
    this.last = performance.now()
  }

  static defaultBurst(bytesPerSec: number): number {
    return Math.max(MIN_BURST, Math.ceil(bytesPerSec / 20))
  }

  private static check(bytesPerSec: number, burstBytes: number | undefined): void {
    if (!(bytesPerSec > 0) || !Number.isFinite(bytesPerSec))
      throw new RangeError(`bytesPerSec must be a positive number, got ${bytesPerSec}`)
    if (burstBytes !== undefined && !(burstBytes >= 1 && Number.isFinite(burstBytes)))
      throw new RangeError(`burstBytes must be >= 1, got ${burstBytes}`)
  }

  get bytesPerSec(): number {
    return this.rate
  }

  get burstBytes(): number {
    return this.burst
  }

  /** Changes the rate for everyone from now on (an operator turning the throttle). */
  setRate(bytesPerSec: number, burstBytes?: number): void {
    TokenBucket.check(bytesPerSec, burstBytes)
    this.refill()
    this.rate = bytesPerSec
    this.burst = burstBytes ?? TokenBucket.defaultBurst(bytesPerSec)
    this.tokens = Math.min(this.tokens, this.burst)
  }

  private refill(): void {
    const now = performance.now()
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate)
    this.last = now
  }

  /** Resolves once `n` bytes may pass; rejects with RO_ABORTED when `signal` aborts, and
   *  then gives the reservation back so the others do not pay for bytes never sent. */
  async take(n: number, signal?: AbortSignal): Promise<void> {
    if (!(n >= 0)) throw new RangeError(`cannot take ${n} bytes`)
    if (signal?.aborted) throw new StoreError('RO_ABORTED', 'aborted while throttled')
    this.refill()
    this.tokens -= n
    if (this.tokens >= 0) return
    const waitMs = (-this.tokens / this.rate) * 1000
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        clearTimeout(timer)
        this.tokens += n
        reject(new StoreError('RO_ABORTED', 'aborted while throttled'))
      }
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }, Math.ceil(waitMs))
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }
}
