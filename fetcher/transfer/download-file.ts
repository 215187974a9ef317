import { createReadStream } from 'node:fs'
import { open, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../common/errors'
import { createFileHasher, type FileHasher } from '../../formats/store/chunk/checksum'
import type { ChecksumAlgorithm, FileEntry } from '../../formats/store/layout/metadata'
import { backoffDelay, sleep, type BackoffPolicy } from './backoff'
import { checksumStream } from './checksum-stream'
import { failureReason, FetchFailure } from './failure-reason'
import { local } from './local-io'
import { PartWriter } from './part-writer'
import type { ProgressTracker } from './progress'
import { discardReadResult, RestartFromZeroError, type FetchSource } from '../sources/source'
import { guardPromise, StallError, stallGuard } from './stall-guard'
import { throttle } from './throttle'
import type { TokenBucket } from './token-bucket'

export interface DownloadContext {
  readonly source: FetchSource
  /** Directory of the node under the source root, e.g. "node-3"; '' for files at the root (format 2). */
  readonly sourceDir: string
  readonly destDir: string
  readonly algorithm: ChecksumAlgorithm
  /** Applied in order: the fetch's own limit, then the node-wide one. */
  readonly buckets: readonly TokenBucket[]
  /** Aborts when the fetch is cancelled or a sibling download failed for good. */
  readonly signal: AbortSignal
  readonly retries: number
  /** Set: failures of the file allowed in all, progress or not (a peer that trickles is left for the next source). */
  readonly totalRetries?: number
  readonly backoff: BackoffPolicy
  readonly stallTimeoutMs: number
  /** Keep the written data files out of the page cache (PartWriter). */
  readonly dropBehind: boolean
  readonly progress: ProgressTracker
  readonly onBytes: (n: number) => void
  readonly onRetry: () => void
  readonly onChecksumFailure: () => void
}

/** The bytes on disk are not the file of the manifest: start over from byte 0. */
class ChecksumFailure extends FetchFailure {
  override readonly name = 'ChecksumFailure'
}

function remoteName(ctx: DownloadContext, name: string): string {
  return ctx.sourceDir === '' ? name : `${ctx.sourceDir}/${name}`
}

async function sizeOrZero(path: string): Promise<number> {
  try {
    return (await stat(path)).size
  } catch {
    return 0
  }
}

async function hashPrefix(path: string, length: number, hasher: FileHasher): Promise<void> {
  await local(`re-reading ${path}`, async () => {
    for await (const chunk of createReadStream(path, { start: 0, end: length - 1, highWaterMark: 1 << 20 })) hasher.update(chunk as Buffer)
  })
}

/**
 * One attempt: resume `<name>.part` from its current length (re-hashing what is already
 * there, so the checksum always covers the whole file), stream the rest through stall
 * guard, throttles and hasher, fsync, verify, rename. Counts received bytes into `received`.
 */
async function attempt(ctx: DownloadContext, entry: FileEntry, received: { n: number; reached: number }): Promise<void> {
  const remote = remoteName(ctx, entry.name)
  const where = ctx.source.describe(remote)
  const part = join(ctx.destDir, `${entry.name}.part`)
  let start = await sizeOrZero(part)
  if (start > entry.size) start = 0
  let hasher = await createFileHasher(ctx.algorithm)
  if (start > 0) await hashPrefix(part, start, hasher)
  ctx.progress.setBytes(entry.name, start)
  const attemptCtl = new AbortController()
  const signal = AbortSignal.any([ctx.signal, attemptCtl.signal])
  const onStall = (err: Error): void => attemptCtl.abort(err)
  const fh = await local(`opening ${part}`, () => open(part, start > 0 ? 'r+' : 'w'))
  let writer: PartWriter | undefined
  try {
    await local(`truncating ${part}`, () => fh.truncate(start))
    if (start < entry.size) {
      const res = await guardPromise(ctx.source.read(remote, { start, signal }), ctx.stallTimeoutMs, where, onStall, {
        signal,
        onLate: discardReadResult,
      })
      if (res.start !== start) {
        if (res.start !== 0) throw new RestartFromZeroError(`${where}: asked from byte ${start}, source answered from ${res.start}`)
        // The source ignored the range (HTTP 200): take the whole file from this answer.
        start = 0
        hasher = await createFileHasher(ctx.algorithm)
        await local(`truncating ${part}`, () => fh.truncate(0))
        ctx.progress.setBytes(entry.name, 0)
      }
      if (res.size !== undefined && res.size !== entry.size)
        throw new ChecksumFailure(`${where}: ${res.size} bytes at the source, manifest says ${entry.size}`)
      let stream: AsyncIterable<Buffer> = stallGuard(res.stream, ctx.stallTimeoutMs, where, onStall)
      for (const bucket of ctx.buckets) stream = throttle(stream, bucket, signal)
      stream = checksumStream(stream, hasher)
      const w = new PartWriter(fh, start, { dropBehind: ctx.dropBehind && entry.name.endsWith('.data') })
      writer = w
      let pos = start
      for await (const chunk of stream) {
        if (pos + chunk.length > entry.size) throw new ChecksumFailure(`${where}: more bytes than the ${entry.size} of the manifest`)
        await local(`writing ${part}`, () => w.write(chunk))
        pos += chunk.length
        received.n += chunk.length
        received.reached = pos
        ctx.onBytes(chunk.length)
        ctx.progress.addBytes(entry.name, chunk.length)
      }
      await local(`writing ${part}`, () => w.flush())
      if (pos < entry.size) throw new ChecksumFailure(`${where}: source ended after ${pos} of ${entry.size} bytes`)
    }
    const digest = hasher.digest()
    if (digest !== entry.checksum) throw new ChecksumFailure(`${where}: checksum ${digest}, manifest says ${entry.checksum}`)
    await local(`syncing ${part}`, () => fh.sync())
    writer?.dropAll()
  } catch (err) {
    // A stall shows up downstream as whatever the abort caused (AbortError, RO_ABORTED
    // from a throttle); report the stall itself.
    const stall: unknown = attemptCtl.signal.aborted ? attemptCtl.signal.reason : undefined
    // Tear down the connection of this attempt whatever stage it failed in.
    attemptCtl.abort()
    // Keep what did arrive: the next attempt resumes after it (and re-hashes it).
    await writer?.flush().catch(() => undefined)
    throw stall instanceof StallError ? stall : err
  } finally {
    await fh.close().catch(() => undefined)
  }
  await local(`renaming ${part}`, () => rename(part, join(ctx.destDir, entry.name)))
}

/**
 * Downloads one manifest file into destDir with retries. Transient failures (connection
 * errors, 5xx, stalls) resume from the partial file; retries are counted in a row without
 * progress, so a long file over a flaky link keeps going as long as it advances.
 * Progress is reaching further into the file than any attempt before: a source that ignores
 * Range and cuts every answer at the same place sends bytes each time but never advances,
 * and runs out of retries (with growing back-off) like one that sends nothing.
 * Checksum or size mismatches restart the file from scratch and are never forgiven.
 */
export async function downloadFile(ctx: DownloadContext, entry: FileEntry): Promise<void> {
  const remote = remoteName(ctx, entry.name)
  const part = join(ctx.destDir, `${entry.name}.part`)
  let inARow = 0
  let checksumFailures = 0
  let failures = 0
  /** The furthest byte any attempt reached. */
  let furthest = await sizeOrZero(part)
  ctx.progress.setState(entry.name, 'active')
  for (;;) {
    const received = { n: 0, reached: 0 }
    try {
      await attempt(ctx, entry, received)
      ctx.progress.setState(entry.name, 'done')
      return
    } catch (err) {
      if (ctx.signal.aborted || (err instanceof StoreError && !(err.code === 'RO_ABORTED'))) {
        ctx.progress.setState(entry.name, 'failed')
        throw err
      }
      const checksum = err instanceof ChecksumFailure
      if (checksum || err instanceof RestartFromZeroError) {
        await local(`removing ${part}`, () => rm(part, { force: true }))
        furthest = 0
      }
      if (checksum) {
        checksumFailures++
        ctx.progress.checksumFailure()
        ctx.onChecksumFailure()
      }
      const advanced = received.reached > furthest
      if (advanced) furthest = received.reached
      inARow = advanced && !checksum ? 1 : inARow + 1
      failures++
      const exhausted = ctx.totalRetries !== undefined && failures > ctx.totalRetries
      if (checksumFailures > ctx.retries || inARow > ctx.retries || exhausted) {
        ctx.progress.setState(entry.name, 'failed')
        const code = checksum ? 'RO_CHECKSUM_MISMATCH' : 'RO_FETCH_FAILED'
        const tries = checksum ? checksumFailures : exhausted ? failures : inARow
        throw new StoreError(code, `${ctx.source.describe(remote)}: gave up after ${tries - 1} retries: ${failureReason(err)}`, {
          cause: err,
        })
      }
      ctx.progress.retry(entry.name)
      ctx.onRetry()
      await sleep(backoffDelay(checksum ? checksumFailures : inARow, ctx.backoff), ctx.signal)
    }
  }
}
