/**
 * Request bytes a serving process holds for requests that have not all arrived yet (RESP
 * commands cut across reads, HTTP request bodies), against one budget per process. Each
 * request is bounded on its own (16 MiB); this bounds their sum, so many clients that start
 * large requests and never finish them cost the node at most the budget: past it, new large
 * requests are refused (`RO_BUSY`, HTTP 503 with `Retry-After`) while small ones, which hold
 * nothing between reads, are served as before.
 */
export class RequestBudget {
  private used = 0

  /** @param limit bytes at most held at once (`--max-buffered-request-bytes`, default 64 MiB) */
  constructor(readonly limit: number) {}

  /** Bytes held now. */
  get held(): number {
    return this.used
  }

  /** Takes `n` more bytes; false (taking nothing) when that would pass the limit. */
  take(n: number): boolean {
    if (this.used + n > this.limit) return false
    this.used += n
    return true
  }

  /** Moves a holder's charge from `was` to `now` bytes; false when it grew past the limit (the charge is moved anyway). */
  move(was: number, now: number): boolean {
    this.used += now - was
    return now <= was || this.used <= this.limit
  }

  give(n: number): void {
    this.used -= n
  }
}

/**
 * Bytes one request may hold without being charged: a small body, or one read's worth of
 * RESP commands. Requests this small are bounded by the connections a process takes
 * (`--max-connections`, `--resp-max-clients`), and keep being served when the budget is spent.
 */
export const BUDGET_FREE_BYTES = 64 << 10

/** Default budget of one serving process. */
export const DEFAULT_REQUEST_BUDGET_BYTES = 64 << 20

/** How long a client refused for a spent budget is asked to wait, in seconds (HTTP `Retry-After`). */
export const BUSY_RETRY_AFTER_S = 1
