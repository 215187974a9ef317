import { StoreError } from '../../common/errors'
import { S3Error } from '../../s3/s3-error'
import type { S3Client } from '../../s3/s3-client'
import { childOf, formatS3Url, parseS3Url, type S3Location } from '../../s3/s3-url'
import { FetchFailure } from '../transfer/failure-reason'
import { RestartFromZeroError, type FetchSource, type ReadRequest, type ReadResult } from './source'

export interface S3SourceOptions {
  /** Bytes per ranged GET; default 8 MiB. */
  readonly rangeBytes?: number
  /** Ranged GETs of one file in flight at once; default 4. */
  readonly parallel?: number
}

/**
 * Build output in object storage (`s3://bucket/prefix`), read with the node's own
 * credentials (never the pusher's). A file is read as ranged GETs, `parallel` of them in
 * flight and delivered in order: one connection to S3 carries far less than a node can
 * take. The ranges ahead of the one being delivered are held in memory, so a file costs
 * at most `parallel × rangeBytes` of buffers. The job's contract holds: bytes from
 * `start` to the end, in order; resume is a new read from where the job's copy ends.
 */
export class S3Source implements FetchSource {
  private readonly root: S3Location
  private readonly rangeBytes: number
  private readonly parallel: number

  constructor(
    root: string,
    /** The node's client, made at the first read: a source that is never read needs no credentials. */
    private readonly client: () => S3Client,
    opts: S3SourceOptions = {},
  ) {
    this.root = parseS3Url(root)
    this.rangeBytes = opts.rangeBytes ?? 8 << 20
    this.parallel = opts.parallel ?? 4
  }

  describe(name?: string): string {
    return formatS3Url(name === undefined ? this.root : childOf(this.root, name))
  }

  async read(name: string, req: ReadRequest): Promise<ReadResult> {
    const loc = childOf(this.root, name)
    const where = this.describe(name)
    let first
    try {
      first = await this.s3().get(loc, { start: req.start, end: req.start + this.rangeBytes - 1, signal: req.signal })
    } catch (err) {
      throw sourceError(where, err)
    }
    if (first.start !== req.start) {
      // The store ignored the range (a 200): the whole file, as one stream.
      return { stream: first.stream, start: first.start, size: first.size }
    }
    const firstEnd = Math.min(first.size, req.start + this.rangeBytes)
    if (firstEnd >= first.size) return { stream: first.stream, start: req.start, size: first.size }
    return { stream: this.ranges(loc, where, first.stream, firstEnd, first.size, req.signal), start: req.start, size: first.size }
  }

  private s3(): S3Client {
    try {
      return this.client()
    } catch (err) {
      // No credentials or a bad endpoint on this node: asking again will not help.
      throw new StoreError('RO_FETCH_FAILED', `${this.describe()}: ${(err as Error).message}`, { cause: err })
    }
  }

  /** The first range as it streams, then the rest as ranged GETs, `parallel` ahead. */
  private async *ranges(
    loc: S3Location,
    where: string,
    head: AsyncIterable<Buffer>,
    from: number,
    size: number,
    signal: AbortSignal,
  ): AsyncGenerator<Buffer> {
    const stop = new AbortController()
    const both = AbortSignal.any([signal, stop.signal])
    const pending: Array<Promise<Buffer[]>> = []
    let next = from
    const fill = (): void => {
      while (pending.length < this.parallel - 1 && next < size) {
        const start = next
        const end = Math.min(size, start + this.rangeBytes)
        next = end
        const p = this.fetchRange(loc, where, start, end, both)
        // Handled here too: a range that fails while an earlier one is delivered must not go unobserved.
        p.catch(() => undefined)
        pending.push(p)
      }
    }
    try {
      fill()
      for await (const chunk of head) yield chunk
      while (pending.length > 0) {
        const chunks = await pending.shift()!
        fill()
        for (const chunk of chunks) yield chunk
      }
    } finally {
      stop.abort()
      ;(head as { destroy?: () => void }).destroy?.()
    }
  }

  private async fetchRange(loc: S3Location, where: string, start: number, end: number, signal: AbortSignal): Promise<Buffer[]> {
    try {
      const res = await this.s3().get(loc, { start, end: end - 1, signal })
      if (res.start !== start) {
        res.stream.destroy()
        throw new RestartFromZeroError(`${where}: asked for bytes ${start}-, the store answered from ${res.start}`)
      }
      const chunks: Buffer[] = []
      let n = 0
      for await (const chunk of res.stream as AsyncIterable<Buffer>) {
        chunks.push(chunk)
        n += chunk.length
      }
      if (n !== end - start) throw new FetchFailure(`${where}: bytes ${start}-${end - 1} came ${n} bytes long`)
      return chunks
    } catch (err) {
      throw sourceError(where, err)
    }
  }
}

/** S3's refusals are permanent for the job; its 5xx and throttling are retried; 416 restarts the file. */
function sourceError(where: string, err: unknown): unknown {
  if (err instanceof S3Error) {
    if (err.status === 416) return new RestartFromZeroError(`${where}: range not satisfiable`)
    if (err.permanent) return new StoreError('RO_FETCH_FAILED', err.message)
    return new FetchFailure(err.message)
  }
  return err
}
