import { StoreError } from '../../common/errors'

/**
 * Where a fetch reads build output from. A source is opened on a build output root and
 * reads files by their path under it ("node-3/metadata.json", "node-3/0.data"). It is
 * deliberately tiny so that WebHDFS or S3 can be added without touching the job: the
 * job owns retries, resume bookkeeping, stall detection, throttling and checksums.
 *
 * Error contract (the job's retry policy depends on it):
 *  - StoreError (e.g. RO_FETCH_FAILED for a 404): permanent, the fetch gives up at once.
 *  - RestartFromZeroError: the source cannot resume at the asked offset; the job drops
 *    the partial file and asks again from byte 0.
 *  - anything else (connection reset, 5xx, abort of the attempt's signal): transient,
 *    retried with backoff and resumed from the bytes already on disk.
 */
export interface ReadRequest {
  /** First byte wanted; 0 for the whole file. Never at or beyond the file's size. */
  readonly start: number
  /** Aborted by the job on stall, on fetch abort, or when a sibling download failed.
   *  The source must stop network/disk activity and make its stream reject. */
  readonly signal: AbortSignal
}

export interface ReadResult {
  /** Bytes from `start` to the end of the file. Iteration after the signal aborted must
   *  reject; ending early without an error means the source has no more bytes. */
  readonly stream: AsyncIterable<Buffer>
  /** Offset the stream really begins at: the requested start, or 0 when the source
   *  ignored the range (an HTTP server answering 200 to a Range request). */
  readonly start: number
  /** Whole size of the file at the source, when the source knows it. */
  readonly size?: number
}

export interface FetchSource {
  /** For messages and logs: a URL or path without credentials. */
  describe(name?: string): string
  read(name: string, req: ReadRequest): Promise<ReadResult>
  /** Releases pooled connections; called once when the fetch is over. */
  close?(): void
}

/**
 * A peer has the file's version under way but not this file yet (HTTP 409 RO_NOT_READY):
 * permanent for one attempt, so the source chain decides whether to wait or move on.
 */
export class NotReadyError extends StoreError {
  constructor(message: string) {
    super('RO_NOT_READY', message)
  }
}

/** The source cannot serve the asked range: start the file over. */
export class RestartFromZeroError extends Error {
  override readonly name = 'RestartFromZeroError'
}

/**
 * Releases a read result nobody will consume (it arrived after the attempt gave up): the
 * stream is destroyed, and an error it emits later has a listener, so it cannot take the
 * process down.
 */
export function discardReadResult(res: ReadResult): void {
  const s = res.stream as { on?: (ev: string, fn: () => void) => unknown; destroy?: () => void }
  if (typeof s.on === 'function') s.on('error', () => undefined)
  if (typeof s.destroy === 'function') s.destroy()
  else void Promise.resolve(res.stream[Symbol.asyncIterator]().return?.()).catch(() => undefined)
}
