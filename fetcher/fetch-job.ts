import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises'
import { slowDiskDelay } from '../common/test-slow-disk'
import { dirname, join, resolve } from 'node:path'
import { StoreError } from '../common/errors'
import { redactCredentials } from '../common/redact'
import { nodeDirName } from '../formats/store/layout/layout'
import { METADATA_FILE, type FileEntry, type StoreMetadata } from '../formats/store/layout/metadata'
import { MAX_METADATA_BYTES } from '../formats/store/layout/metadata-io'
import { DEFAULT_BACKOFF, type BackoffPolicy } from './transfer/backoff'
import { ensureFreeSpace, freeBytesOf } from './transfer/disk-space'
import { downloadFile, type DownloadContext } from './transfer/download-file'
import type { FetchMetrics } from './fetch-metrics'
import { failureReason } from './transfer/failure-reason'
import type { FsGate } from './transfer/fs-gate'
import { local } from './transfer/local-io'
import { parseManifest } from './manifest'
import { ProgressTracker, type FetchProgress } from './transfer/progress'
import { readSmall } from './transfer/read-small'
import { keepForResume, keptBytes, takeOverKept } from './resume-dir'
import type { FileSourceCalls } from './sources/file'
import { openSource } from './sources/open-source'
import type { FetchSource } from './sources/source'
import { TokenBucket } from './transfer/token-bucket'

export type { FetchProgress, FileProgress, FileState } from './transfer/progress'

export interface FetchOptions {
  /** Build output root: a path, file://, http://, https:// (its query sent with every request) or s3:// URL. */
  readonly source: string
  /** When given, `source` must lie under one of these prefixes (else RO_BAD_REQUEST). */
  readonly allowedSources?: readonly string[]
  readonly nodeId: number
  /** Directory to create and fill; must not exist yet. Its parent must exist and should
   *  be on the file system of the live versions, so that going live is a rename. */
  readonly destDir: string
  /** This fetch's own limit, on top of `bucket`. */
  readonly maxBytesPerSec?: number
  /** Node-wide limit shared by every fetch of the node. */
  readonly bucket?: TokenBucket
  readonly signal?: AbortSignal
  /** Files downloaded in parallel; default 4. */
  readonly concurrency?: number
  /** Retries per file in a row without new bytes (and checksum failures per file); default 5. */
  readonly retries?: number
  /** First retry delay, doubling up to 5 s; default 200 ms. */
  readonly retryBaseDelayMs?: number
  /** A download with no byte for this long is cut and retried; default 30000. */
  readonly stallTimeoutMs?: number
  /** Free space kept on top of the fetch; default 64 MiB. */
  readonly freeSpaceMarginBytes?: number
  /** Free bytes where destDir goes; default statfs of destDir's parent. */
  readonly freeBytes?: () => Promise<number>
  /** Refuse a manifest of another store or version. */
  readonly expect?: { readonly store?: string; readonly version?: number }
  readonly onProgress?: (p: FetchProgress) => void
  readonly metrics?: FetchMetrics
  /**
   * Node-wide bound on the blocking file-system calls of local sources (fs-gate.ts); this
   * fetch makes one at a time under it. Default: a gate of the fetch's own.
   */
  readonly fsGate?: FsGate
  /**
   * Where a failed fetch keeps what it verified, and where the next fetch of the same
   * manifest takes it from (resume-dir.ts). Absent: a failed fetch removes its copy.
   */
  readonly resumeDir?: string
  /**
   * Write the data files past the page cache (fetcher/transfer/part-writer.ts): a version as large as
   * the live one must not evict its hot pages. Default true; index files stay cached (the
   * swap reads them).
   */
  readonly dropBehind?: boolean
  /** Test seam: the file-system calls of a local source (a blocking open stands for a hung mount). */
  readonly fileCalls?: FileSourceCalls
}

const DEFAULT_MARGIN = 64 << 20

/** Data files first, index files last, biggest first within each: an index names data
 *  that must already be there, and starting big files early shortens the tail. */
export function downloadOrder(files: readonly FileEntry[]): FileEntry[] {
  const rank = (f: FileEntry): number => (f.name.endsWith('.data') ? 0 : 1)
  return [...files].sort((a, b) => rank(a) - rank(b) || b.size - a.size || a.name.localeCompare(b.name))
}

/**
 * A fetch's options checked and defaulted, and the controller that stops its downloads
 * (on failure, or when the caller's signal fires): shared by both formats' fetches.
 */
export function fetchSettings(opts: Parameters<typeof checkOptions>[0] & Pick<FetchOptions, 'signal'>): {
  destDir: string
  retries: number
  backoff: BackoffPolicy
  stallTimeoutMs: number
  stop: AbortController
  signal: AbortSignal
} {
  checkOptions(opts)
  const stop = new AbortController()
  return {
    destDir: resolve(opts.destDir),
    retries: opts.retries ?? 5,
    backoff: { baseMs: opts.retryBaseDelayMs ?? DEFAULT_BACKOFF.baseMs, maxMs: DEFAULT_BACKOFF.maxMs },
    stallTimeoutMs: opts.stallTimeoutMs ?? 30_000,
    stop,
    signal: opts.signal === undefined ? stop.signal : AbortSignal.any([opts.signal, stop.signal]),
  }
}

export function checkOptions(
  o: Pick<FetchOptions, 'nodeId' | 'destDir' | 'concurrency' | 'stallTimeoutMs' | 'retryBaseDelayMs' | 'retries' | 'maxBytesPerSec'>,
): void {
  if (!Number.isSafeInteger(o.nodeId) || o.nodeId < 0) throw new RangeError(`nodeId must be a non-negative integer, got ${o.nodeId}`)
  if (typeof o.destDir !== 'string' || o.destDir === '') throw new TypeError('destDir is required')
  const positiveInt = (k: 'concurrency' | 'stallTimeoutMs' | 'retryBaseDelayMs', v: number | undefined): void => {
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 1)) throw new RangeError(`${k} must be a positive integer, got ${v}`)
  }
  positiveInt('concurrency', o.concurrency)
  positiveInt('stallTimeoutMs', o.stallTimeoutMs)
  positiveInt('retryBaseDelayMs', o.retryBaseDelayMs)
  if (o.retries !== undefined && (!Number.isSafeInteger(o.retries) || o.retries < 0))
    throw new RangeError(`retries must be >= 0, got ${o.retries}`)
  if (o.maxBytesPerSec !== undefined && !(o.maxBytesPerSec > 0))
    throw new RangeError(`maxBytesPerSec must be positive, got ${o.maxBytesPerSec}`)
}

/** Runs `work` over `items` with `concurrency` workers; the first failure stops the rest
 *  (through `stop`) and is the one reported, once every worker has settled. */
export async function runPool<T>(
  items: readonly T[],
  concurrency: number,
  stop: AbortController,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0
  let first: { err: unknown } | undefined
  const worker = async (): Promise<void> => {
    while (!stop.signal.aborted && next < items.length) {
      const item = items[next++] as T
      try {
        await work(item)
      } catch (err) {
        first ??= { err }
        stop.abort()
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker))
  if (first !== undefined) throw first.err
  stop.signal.throwIfAborted()
}

/** Writes a file durably under its final name: .part, fsync, rename. */
export async function writeDurably(path: string, bytes: Buffer): Promise<void> {
  const part = `${path}.part`
  await writeFile(part, bytes)
  const fh = await open(part, 'r+')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
  await rename(part, path)
}

export async function fsyncDir(dir: string): Promise<void> {
  await slowDiskDelay()
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/**
 * Pulls one node's directory of a store version from a build output into `destDir`,
 * verified and complete, or leaves nothing behind. Resolves with the manifest.
 */
export async function fetchVersion(opts: FetchOptions): Promise<StoreMetadata> {
  const started = performance.now()
  const { destDir, retries, backoff, stallTimeoutMs, stop, signal } = fetchSettings(opts)
  const m = opts.metrics
  let store = opts.expect?.store ?? ''
  let source: FetchSource | undefined
  let created = false
  let metaBytes: Buffer | undefined
  let progress: ProgressTracker | undefined
  try {
    if (opts.signal?.aborted) throw new StoreError('RO_ABORTED', 'aborted before start')
    source = await openSource(opts.source, {
      signal,
      ...(opts.allowedSources === undefined ? {} : { allowedSources: opts.allowedSources }),
      ...(opts.fsGate === undefined ? {} : { gate: opts.fsGate }),
      ...(opts.fileCalls === undefined ? {} : { fileCalls: opts.fileCalls }),
    })
    const sourceDir = nodeDirName(opts.nodeId)
    const metaName = `${sourceDir}/${METADATA_FILE}`
    metaBytes = await readSmall(source, metaName, {
      maxBytes: MAX_METADATA_BYTES,
      signal,
      retries,
      backoff,
      stallTimeoutMs,
      onRetry: () => m?.retries.inc({ store }),
    })
    const meta = parseManifest(metaBytes, source.describe(metaName), { nodeId: opts.nodeId, ...opts.expect })
    store = meta.store
    m?.bytes.inc({ store }, metaBytes.length)
    // A zstd version's dictionary travels with its chunk files.
    const files = meta.dictionary ? [meta.dictionary, ...meta.files] : meta.files
    const filesBytes = files.reduce((a, f) => a + f.size, 0)
    const resumed =
      opts.resumeDir !== undefined &&
      (await local(`taking over ${opts.resumeDir}`, () => takeOverKept(opts.resumeDir!, destDir, metaBytes!)))
    created = resumed
    const kept = resumed ? await local(`reading ${destDir}`, () => keptBytes(destDir, files)) : undefined
    const keptTotal = [...(kept?.bytes.values() ?? [])].reduce((a, n) => a + n, 0)
    await ensureFreeSpace(
      filesBytes + metaBytes.length - keptTotal,
      opts.freeSpaceMarginBytes ?? DEFAULT_MARGIN,
      opts.freeBytes ?? (() => freeBytesOf(dirname(destDir))),
      dirname(destDir),
    )
    try {
      if (!resumed) await mkdir(destDir)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'EEXIST')
        throw new StoreError('RO_CONFLICT', `${destDir} already exists; a fetch fills a new directory only`, { cause: err })
      throw new StoreError('RO_IO', `cannot create ${destDir}: ${(err as Error).message}`, { cause: err })
    }
    created = true
    const order = downloadOrder(files.filter((f) => kept?.complete.has(f.name) !== true))
    progress = new ProgressTracker(downloadOrder(files), opts.onProgress)
    for (const name of kept?.complete ?? []) {
      progress.setBytes(name, kept!.bytes.get(name) ?? 0)
      progress.setState(name, 'done')
    }
    const buckets: TokenBucket[] = []
    if (opts.maxBytesPerSec !== undefined) buckets.push(new TokenBucket(opts.maxBytesPerSec))
    if (opts.bucket !== undefined) buckets.push(opts.bucket)
    const ctx: DownloadContext = {
      source,
      sourceDir,
      destDir,
      algorithm: meta.checksumAlgorithm,
      buckets,
      signal,
      retries,
      backoff,
      stallTimeoutMs,
      dropBehind: opts.dropBehind ?? true,
      progress,
      onBytes: (n) => m?.bytes.inc({ store }, n),
      onRetry: () => m?.retries.inc({ store }),
      onChecksumFailure: () => m?.checksumFailures.inc({ store }),
    }
    await runPool(order, opts.concurrency ?? 4, stop, (entry) => downloadFile(ctx, entry))
    signal.throwIfAborted()
    // Last: a directory with metadata.json in it is a complete one.
    await local(`writing ${METADATA_FILE} in ${destDir}`, () => writeDurably(join(destDir, METADATA_FILE), metaBytes!))
    await local(`syncing ${destDir}`, async () => {
      await fsyncDir(destDir)
      await fsyncDir(dirname(destDir))
    })
    progress.final()
    m?.duration.observe({ result: 'ok' }, (performance.now() - started) / 1000)
    return meta
  } catch (err) {
    stop.abort()
    const failure = toStoreError(err, opts.signal, opts.source)
    progress?.final()
    // Best effort: the error worth reporting is the one that failed the fetch. What was
    // verified is kept for the next fetch unless the disk is the trouble.
    const keep = opts.resumeDir !== undefined && metaBytes !== undefined && !['RO_NO_SPACE', 'RO_IO'].includes(failure.code)
    const kept =
      created &&
      keep &&
      (await keepForResume(destDir, opts.resumeDir!, metaBytes!).then(
        () => true,
        () => false,
      ))
    if (created && !kept) await rm(destDir, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined)
    m?.duration.observe({ result: failure.code }, (performance.now() - started) / 1000)
    throw failure
  } finally {
    source?.close?.()
  }
}

export function toStoreError(err: unknown, signal: AbortSignal | undefined, source: string): StoreError {
  // Whatever the abort broke on its way (a socket, a throttle wait), the cause is the abort.
  const shown = redactCredentials(source)
  if (signal?.aborted) return new StoreError('RO_ABORTED', `fetch from ${shown} aborted`, { cause: err })
  if (err instanceof StoreError) return err
  return new StoreError('RO_FETCH_FAILED', `fetch from ${shown} failed: ${failureReason(err)}`, { cause: err })
}
