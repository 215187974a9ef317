import type { ServerResponse } from 'node:http'
import { StoreError } from '../../common/errors'
import { DEFAULT_REQUEST_BUDGET_BYTES } from './request-budget'

/**
 * Bounds on what one read response may cost the node. A request of a
 * few bytes can name values of many MiB; without these a multi-get of 256 one-MiB values
 * was built as one 256 MiB buffer, and a client that never read held it for as long as
 * TCP kept the connection.
 */
export interface ReadLimits {
  /**
   * Response bytes a request reads ahead of what the client has taken: values are read
   * into a window of this size, written, and the next window is read once the socket
   * has drained. A response that fits in one window goes out with a Content-Length.
   * Default 1 MiB. (A single value larger than the window is held whole.)
   */
  readonly windowBytes: number
  /**
   * Largest response body of a read: a single get of a larger value answers 413
   * RO_TOO_LARGE; a multi-get stops at the limit with an end frame, and the keys from
   * there on are asked for again by the client (docs/API.md). Default 64 MiB, the
   * largest response the client library takes by default.
   */
  readonly maxResponseBytes: number
  /**
   * A response the client stops taking is cut after this long without a byte going out:
   * the connection is closed and the request's reader lease released. Default 30 s.
   */
  readonly sendTimeoutMs: number
  /**
   * Request bytes a serving process holds at once for requests not whole yet: multi-get
   * bodies being received and RESP commands cut across reads (request-budget.ts). Past it, a
   * new body gets 503 `RO_BUSY` with `Retry-After`, a RESP command `-RO_BUSY`. Default 64 MiB.
   */
  readonly maxBufferedRequestBytes: number
}

export const DEFAULT_READ_LIMITS: ReadLimits = {
  windowBytes: 1 << 20,
  maxResponseBytes: 64 << 20,
  sendTimeoutMs: 30_000,
  maxBufferedRequestBytes: DEFAULT_REQUEST_BUDGET_BYTES,
}

/** Defaults filled in; RO_BAD_OPTION for a value out of range (as given on the command line). */
export function readLimits(opts: Partial<ReadLimits> = {}): ReadLimits {
  const out = { ...DEFAULT_READ_LIMITS, ...Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)) }
  const check = (name: string, v: number, min: number): void => {
    if (!Number.isSafeInteger(v) || v < min)
      throw new StoreError('RO_BAD_OPTION', `${name} must be an integer of at least ${min}, got ${v}`)
  }
  check('--max-response-bytes', out.maxResponseBytes, 1024)
  check('--send-timeout-ms', out.sendTimeoutMs, 100)
  check('read window bytes', out.windowBytes, 4096)
  check('--max-buffered-request-bytes', out.maxBufferedRequestBytes, 1 << 20)
  return out
}

/**
 * Cuts a response its client stops taking: when no byte of it has gone out for
 * `timeoutMs` (the socket's inactivity timer, which every completed write restarts), the
 * connection is destroyed, which releases what the request holds on 'close'. A client
 * that reads slowly but steadily is never cut. Once the response is done, the server's
 * keep-alive timeout takes the socket over again.
 */
export function armSendTimeout(res: ServerResponse, timeoutMs: number): void {
  if (res.writableFinished || res.destroyed) return
  res.setTimeout(timeoutMs, () => res.destroy())
}
