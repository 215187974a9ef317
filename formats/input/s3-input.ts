/**
 * Inputs in object storage: an `s3://bucket/key` object read by ranged GETs (Parquet
 * footers and pages, Arrow batches) or one streamed GET per pass (text formats), and an
 * `s3://bucket/prefix/` listed as a directory of parts. Transient failures (5xx,
 * throttling, a cut connection) are retried with back-off, a stream resuming where it
 * was cut; a refusal (no such key or bucket, bad credentials) is RO_BAD_INPUT naming the
 * object, and failures that outlast the retries are RO_IO.
 */
import { StoreError } from '../../common/errors'
import { withRetries } from '../../s3/retry'
import { S3Error } from '../../s3/s3-error'
import { asPrefix, formatS3Url, parseS3Url, type S3Location } from '../../s3/s3-url'
import type { ObjectInfo, S3Client } from '../../s3/s3-client'
import { sharedS3Client } from '../../s3/shared-client'
import { badInput } from './input-error'
import type { InputHandle } from './input-file'
import { isHiddenPart } from './read-input'

/** Errors of S3 calls as the readers report them. */
export function inputS3Error(where: string, err: unknown): unknown {
  if (err instanceof StoreError) return err
  if (err instanceof S3Error) {
    return err.permanent
      ? badInput(where, `cannot read: ${err.message.slice(err.message.indexOf(': ') + 2)}`, err)
      : new StoreError('RO_IO', `${where}: reading failed: ${err.message}`, { cause: err })
  }
  if (err instanceof Error && err.name !== 'AbortError') {
    const code = (err as NodeJS.ErrnoException).code
    return new StoreError('RO_IO', `${where}: reading failed: ${code ?? err.message}`, { cause: err })
  }
  return err
}

function location(url: string): S3Location {
  try {
    return parseS3Url(url)
  } catch (err) {
    throw new StoreError('RO_BAD_OPTION', `${url}: ${(err as Error).message}`)
  }
}

function client(): S3Client {
  return sharedS3Client()
}

/** Size (and time) of an object; RO_BAD_INPUT when there is none. */
export async function statS3Input(url: string): Promise<ObjectInfo> {
  const loc = location(url)
  const info = await withRetries(() => client().head(loc)).catch((err: unknown) => {
    throw inputS3Error(url, err)
  })
  if (info === undefined) throw badInput(url, 'cannot read: no such object')
  return info
}

export async function openS3Input(url: string): Promise<S3InputFile> {
  const info = await statS3Input(url)
  return new S3InputFile(url, location(url), info, client())
}

/** A stream cut this many times in a row without a new byte is given up (RO_IO). */
const STREAM_RETRIES = 5

export class S3InputFile implements InputHandle {
  readonly remote = true
  /** apache-arrow recognises a file handle by `stat` and a numeric `fd`; there is no descriptor. */
  readonly fd = -1

  constructor(
    private readonly url: string,
    private readonly loc: S3Location,
    private readonly info: ObjectInfo,
    private readonly s3: S3Client,
  ) {}

  stat(): Promise<{ size: number; mtimeMs: number }> {
    return Promise.resolve({ size: this.info.size, mtimeMs: this.info.mtimeMs ?? 0 })
  }

  close(): Promise<void> {
    return Promise.resolve()
  }

  /** One ranged GET: bytes [position, position + length) of the object, fewer at its end. */
  async read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }> {
    const end = Math.min(this.info.size, position + length)
    if (length <= 0 || position >= end) return { bytesRead: 0 }
    const bytesRead = await withRetries(async () => {
      const res = await this.s3.get(this.loc, { start: position, end: end - 1 })
      let at = offset
      for await (const chunk of res.stream as AsyncIterable<Buffer>) {
        const room = offset + (end - position) - at
        chunk.copy(buffer, at, 0, Math.min(chunk.length, room))
        at += Math.min(chunk.length, room)
      }
      if (at - offset !== end - position) throw new Error('the answer ended before the asked range')
      return at - offset
    }).catch((err: unknown) => {
      throw inputS3Error(this.url, err)
    })
    return { bytesRead }
  }

  /** The object from `start` on, as one GET, resumed from where it was cut on a transient failure. */
  async *createReadStream(opts: { start: number; highWaterMark: number; autoClose: false }): AsyncGenerator<Buffer> {
    let pos = opts.start
    let failures = 0
    while (pos < this.info.size) {
      let stream: AsyncIterable<Buffer> | undefined
      try {
        const res = await withRetries(() => this.s3.get(this.loc, { start: pos }))
        stream = res.stream
        for await (const chunk of stream) {
          failures = 0
          pos += chunk.length
          yield chunk
        }
        if (pos < this.info.size) throw new Error('the answer ended before the end of the object')
      } catch (err) {
        ;(stream as { destroy?: () => void } | undefined)?.destroy?.()
        const wrapped = inputS3Error(this.url, err)
        if (wrapped instanceof StoreError && wrapped.code === 'RO_BAD_INPUT') throw wrapped
        if (++failures > STREAM_RETRIES || !(err instanceof Error) || err.name === 'AbortError') throw wrapped
      }
    }
  }
}

/**
 * The parts named by an s3:// input: the object itself when the key names one, else every
 * object directly under the key as a prefix ("directory"), in name order, leaving out
 * hidden ones (`_*`, `.*`). `requireSuccess`: a prefix must hold `_SUCCESS` (the writing
 * job finished), else RO_BAD_INPUT.
 */
export async function listS3Input(url: string, requireSuccess: boolean): Promise<string[]> {
  const loc = location(url)
  const s3 = client()
  const fail = (err: unknown): never => {
    throw inputS3Error(url, err)
  }
  if (loc.key !== '' && !loc.key.endsWith('/')) {
    const info = await withRetries(() => s3.head(loc)).catch(fail)
    if (info !== undefined) {
      if (requireSuccess) throw badInput(url, '--require-success needs a prefix (a directory of parts), not one object')
      return [url]
    }
  }
  const prefix = asPrefix(loc.key)
  const keys: string[] = []
  let success = false
  await withRetries(async () => {
    keys.length = 0
    success = false
    for await (const o of s3.list(loc.bucket, prefix, { delimiter: '/' })) {
      const name = o.key.slice(prefix.length)
      if (name === '_SUCCESS') success = true
      if (name === '' || name.includes('/') || isHiddenPart(name)) continue
      keys.push(o.key)
    }
  }).catch(fail)
  if (keys.length === 0 && !success) throw badInput(url, 'no such object, and no objects under it as a prefix')
  if (requireSuccess && !success) {
    throw badInput(url, 'no _SUCCESS marker under this prefix: the job writing it has not finished (or failed)')
  }
  keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  return keys.map((key) => formatS3Url({ bucket: loc.bucket, key }))
}
