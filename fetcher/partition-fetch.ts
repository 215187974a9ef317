import { mkdir, readdir, rename, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { StoreError } from '../common/errors'
import type { NodeTls } from '../cluster/cluster'
import { buildRing, heldPartitions } from '../cluster/routing'
import { METADATA_FILE, type FileEntry, type StoreMetadata } from '../formats/store/layout/metadata'
import { MAX_METADATA_BYTES } from '../formats/store/layout/metadata-io'
import { MANIFEST_FILE, nodeView, parsePartitionFileName } from '../formats/store/layout/partition-files'
import { ensureFreeSpace, freeBytesOf } from './transfer/disk-space'
import { downloadOrder, fetchSettings, fsyncDir, runPool, toStoreError, writeDurably, type FetchOptions } from './fetch-job'
import { local } from './transfer/local-io'
import { ProgressTracker } from './transfer/progress'
import { installByPatches, patchPlans, type PatchResult } from './partition-patch'
import { readSmall } from './transfer/read-small'
import { resumableFiles, reusableFiles, tryLink } from './reuse-files'
import { downloadFromChain, type ChainLink, type ChainPolicy, type FileOrigin } from './source-chain'
import { openSource } from './sources/open-source'
import { peerSource, type PartitionPeer } from './sources/peer'
import type { FetchSource } from './sources/source'
import { TokenBucket } from './transfer/token-bucket'
import { parseVersionManifest } from './version-manifest'

/** `source`: every file from the build output; `peers`: from peers only (the build output is gone); `auto`: peers first, then the build output. */
export const FETCH_FROM = ['auto', 'source', 'peers'] as const
export type FetchFrom = (typeof FETCH_FROM)[number]

export interface PartitionFetchOptions
  extends
    Omit<FetchOptions, 'source' | 'resumeDir' | 'fileCalls' | 'expect'>,
    Pick<ChainPolicy, 'notReadyWaits' | 'peerRetries' | 'onLinkFailed'> {
  /** The build output root (its `metadata.json` is the version manifest); required unless fetchFrom is `peers`. */
  readonly source?: string
  readonly fetchFrom: FetchFrom
  readonly peers?: readonly PartitionPeer[]
  /** Sent to peers as a bearer token (the cluster's admin token). */
  readonly peerToken?: string
  /** Peers over HTTPS: their CA and certificate name. */
  readonly peerTls?: NodeTls
  /** The manifest, given inline (a rebalance's, which exists nowhere else). */
  readonly manifest?: Buffer
  readonly expect: { readonly store: string; readonly version?: number }
  /** Installed version directories of the store: a file with the same name and checksum there, of the same data version, is hardlinked. */
  readonly reuseDirs?: readonly string[]
  /** The live one of `reuseDirs`: a patch's base read from it keeps its pages cached. */
  readonly liveDir?: string
  /**
   * Where a failed fetch leaves the files it verified (destDir renamed there, replacing an
   * older one), and where the next fetch of the same data takes them from (hard links):
   * a fetch cut at 90% moves only the last 10% again. Removed once a fetch succeeds.
   */
  readonly resumeDir?: string
  /** Called once destDir holds `manifest.json`: from then on its verified files may be served to peers. */
  readonly onStarted?: (view: StoreMetadata) => void
}

export interface PartitionFetchResult {
  /** The node view, as written to `metadata.json`. */
  readonly meta: StoreMetadata
  /** Bytes of the held files, by where they came from (`link`: hardlinked, nothing moved). */
  readonly bytesFrom: Readonly<Record<FileOrigin, number>>
  readonly filesFrom: Readonly<Record<FileOrigin, number>>
  /** "Not ready" answers of peers waited out (a peer fetching the same partition). */
  readonly notReadyWaits: number
  /** Partitions rebuilt from a base this node holds and their patch (partition-patch.ts). */
  readonly patches: PatchResult
}

/**
 * Fetches a format-2 version onto this node: reads the version manifest (inline, the build
 * output's `metadata.json`, or a peer's `manifest.json`), narrows it to the partitions this
 * node holds (`nodeView`), and takes each held file from, in order: an installed version
 * of the same data (hardlink), the peers that hold its partition, the build output.
 * destDir gets `manifest.json` first, the files, then `metadata.json` (the node view) last.
 * All or nothing, like `fetchVersion`; a failed partition fetch keeps nothing for resume.
 */
export async function fetchPartitions(opts: PartitionFetchOptions): Promise<PartitionFetchResult> {
  const { destDir, retries, backoff, stallTimeoutMs, stop, signal } = fetchSettings(opts)
  if (opts.fetchFrom !== 'peers' && opts.source === undefined)
    throw new StoreError('RO_BAD_REQUEST', `fetchFrom ${opts.fetchFrom} needs a source`)
  const started = performance.now()
  const m = opts.metrics
  const store = opts.expect.store
  const shown = opts.source ?? `the peers of store ${store}`
  const opened: FetchSource[] = []
  let created = false
  let progress: ProgressTracker | undefined
  try {
    signal.throwIfAborted()
    const source =
      opts.fetchFrom === 'peers' || opts.source === undefined
        ? undefined
        : await openSource(opts.source, {
            signal,
            ...(opts.allowedSources === undefined ? {} : { allowedSources: opts.allowedSources }),
            ...(opts.fsGate === undefined ? {} : { gate: opts.fsGate }),
          })
    if (source) opened.push(source)
    const small = { maxBytes: MAX_METADATA_BYTES, signal, retries, backoff, stallTimeoutMs }
    const peerAccess = {
      ...(opts.peerToken === undefined ? {} : { token: opts.peerToken }),
      ...(opts.peerTls === undefined ? {} : { tls: opts.peerTls }),
    }
    const peers = opts.fetchFrom === 'source' ? [] : (opts.peers ?? [])
    const version = opts.expect.version
    let manifestBytes = opts.manifest
    if (manifestBytes === undefined && source) manifestBytes = await readSmall(source, METADATA_FILE, small)
    // Only a peer asked for this very version holds its manifest (a rebalance's peers hold older ones).
    for (const p of manifestBytes === undefined ? peers.filter((q) => q.version === undefined || q.version === version) : []) {
      if (version === undefined) throw new StoreError('RO_BAD_REQUEST', 'a fetch from peers names its version')
      const s = peerSource(p, store, version, peerAccess)
      opened.push(s)
      manifestBytes = await readSmall(s, MANIFEST_FILE, small).catch(() => undefined)
      if (manifestBytes !== undefined) break
    }
    if (manifestBytes === undefined) throw new StoreError('RO_FETCH_FAILED', `no peer of store ${store} answered with the version manifest`)
    const manifest = parseVersionManifest(manifestBytes, opts.manifest ? 'the manifest given' : 'the version manifest', opts.expect)
    const view = nodeView(manifest, opts.nodeId)
    const ring = buildRing(manifest.layout)
    const peerLinks = peers.map((p) => {
      const s = peerSource(p, store, manifest.version, peerAccess)
      opened.push(s)
      const holds = new Set(p.partitions ?? heldPartitions(ring, manifest.replication, p.nodeId))
      return { holds, link: { from: 'peer', source: s, dir: '', label: `node ${p.nodeId}` } satisfies ChainLink }
    })
    const sourceLink: ChainLink[] = source && opts.fetchFrom !== 'peers' ? [{ from: 'source', source, dir: '', label: 'build output' }] : []
    const linksOf = (name: string): ChainLink[] => {
      const partition = parsePartitionFileName(name)?.partition
      // The dictionary is in every node's copy of the version: any peer gives it.
      const holders = partition === undefined ? peerLinks : peerLinks.filter((l) => l.holds.has(partition))
      return [...holders.map((l) => l.link), ...sourceLink]
    }
    const wanted = view.dictionary ? [view.dictionary, ...view.files] : view.files
    const reuse = new Map([...(await resumableFiles(opts.resumeDir, manifest)), ...(await reusableFiles(opts.reuseDirs ?? [], manifest))])
    const reusable = (f: FileEntry): boolean => reuse.get(f.name)?.checksum === f.checksum && reuse.get(f.name)?.size === f.size
    const toMove = wanted.filter((f) => !reusable(f))
    const missing = [...new Set(toMove.filter((f) => linksOf(f.name).length === 0).map((f) => parsePartitionFileName(f.name)?.partition))]
    if (missing.length > 0) {
      throw new StoreError(
        'RO_FETCH_FAILED',
        `no source holds partition${missing.length > 1 ? 's' : ''} ${missing.slice(0, 20).join(', ')} of store ${store} version ${manifest.version}: name a peer that holds ${missing.length > 1 ? 'them' : 'it'}, or fetch from the build output`,
      )
    }
    await ensureFreeSpace(
      toMove.reduce((a, f) => a + f.size, 0) + 2 * manifestBytes.length,
      opts.freeSpaceMarginBytes ?? 64 << 20,
      opts.freeBytes ?? (() => freeBytesOf(dirname(destDir))),
      dirname(destDir),
    )
    try {
      await mkdir(destDir)
    } catch (err) {
      const exists = (err as NodeJS.ErrnoException).code === 'EEXIST'
      throw new StoreError(exists ? 'RO_CONFLICT' : 'RO_IO', `cannot create the fetch's directory${exists ? ': it exists' : ''}`, {
        cause: err,
      })
    }
    created = true
    await local('writing the version manifest', () => writeDurably(join(destDir, MANIFEST_FILE), manifestBytes))
    opts.onStarted?.(view)
    const bytesFrom: Record<FileOrigin, number> = { source: 0, peer: 0, link: 0 }
    const filesFrom: Record<FileOrigin, number> = { source: 0, peer: 0, link: 0 }
    let order: FileEntry[] = []
    for (const f of downloadOrder(wanted)) {
      if (await tryLink(reuse.get(f.name), f, join(destDir, f.name))) {
        bytesFrom.link += f.size
        filesFrom.link++
        m?.fileBytes.inc({ from: 'link' }, f.size)
      } else order.push(f)
    }
    // Files only the build output gives first (this node is their partitions' first
    // replica), files a peer gives last: the peers are then done with theirs.
    const viaPeer = (f: FileEntry): number => (linksOf(f.name)[0]?.from === 'peer' ? 1 : 0)
    order.sort((a, b) => viaPeer(a) - viaPeer(b))
    progress = new ProgressTracker([])
    const buckets: TokenBucket[] = []
    if (opts.maxBytesPerSec !== undefined) buckets.push(new TokenBucket(opts.maxBytesPerSec))
    if (opts.bucket !== undefined) buckets.push(opts.bucket)
    let base = {
      destDir,
      algorithm: manifest.checksumAlgorithm,
      buckets,
      signal,
      retries,
      backoff,
      stallTimeoutMs,
      dropBehind: opts.dropBehind ?? true,
      progress,
      onRetry: () => m?.retries.inc({ store }),
      onChecksumFailure: () => m?.checksumFailures.inc({ store }),
    }
    let notReadyWaits = 0
    const policy: ChainPolicy = {
      onNotReady: () => notReadyWaits++,
      ...(opts.notReadyWaits === undefined ? {} : { notReadyWaits: opts.notReadyWaits }),
      ...(opts.peerRetries === undefined ? {} : { peerRetries: opts.peerRetries }),
      onLinkFailed: (l, err) => {
        m?.sourceFailovers.inc({ from: l.from })
        opts.onLinkFailed?.(l, err)
      },
      onBytes: (from, n) => {
        bytesFrom[from] += n
        m?.bytes.inc({ store }, n)
        m?.fileBytes.inc({ from }, n)
      },
    }
    // Partitions this node can make from a base it holds come by patch; failed ones, whole.
    const patches = await installByPatches(
      {
        destDir,
        manifest,
        download: async (e) =>
          void (await downloadFromChain({ ...base, progress: new ProgressTracker([e]) }, e, sourceLink, patchPolicy(policy, m, store))),
        signal,
      },
      sourceLink.length === 0 ? [] : await patchPlans(manifest, unlinkedPartitions(view, order), installedDirs(opts)),
    )
    const made = new Set(patches.partitions)
    order = order.filter((f) => !made.has(parsePartitionFileName(f.name)?.partition as number))
    progress = new ProgressTracker(order, opts.onProgress)
    base = { ...base, progress }
    await runPool(order, opts.concurrency ?? 4, stop, async (f) => {
      filesFrom[await downloadFromChain(base, f, linksOf(f.name), policy)]++
    })
    signal.throwIfAborted()
    // Last: a directory with metadata.json in it is a complete one.
    await local(`writing ${METADATA_FILE}`, () =>
      writeDurably(join(destDir, METADATA_FILE), Buffer.from(`${JSON.stringify(view, null, 2)}\n`)),
    )
    await local('syncing the fetched version', async () => {
      await fsyncDir(destDir)
      await fsyncDir(dirname(destDir))
    })
    progress.final()
    m?.duration.observe({ result: 'ok' }, (performance.now() - started) / 1000)
    if (opts.resumeDir !== undefined) await rm(opts.resumeDir, { recursive: true, force: true }).catch(() => undefined)
    return { meta: view, bytesFrom, filesFrom, notReadyWaits, patches }
  } catch (err) {
    stop.abort()
    const failure = toStoreError(err, opts.signal, shown)
    progress?.final()
    if (created) await keepForResume(destDir, opts.resumeDir)
    m?.duration.observe({ result: failure.code }, (performance.now() - started) / 1000)
    throw failure
  } finally {
    for (const s of opened) s.close?.()
  }
}

/** Held partitions none of whose files were linked: all of them are to be moved. */
function unlinkedPartitions(view: StoreMetadata, order: readonly FileEntry[]): number[] {
  const moved = new Set(order.map((f) => f.name))
  return (view.held ?? []).filter((p) => view.files.every((f) => parsePartitionFileName(f.name)?.partition !== p || moved.has(f.name)))
}

function installedDirs(opts: PartitionFetchOptions): { dir: string; live: boolean }[] {
  return (opts.reuseDirs ?? []).map((dir) => ({ dir, live: dir === opts.liveDir }))
}

/** A patch's bytes count as moved, not as a file's: the partition's files are counted by the rebuild. */
function patchPolicy(policy: ChainPolicy, m: PartitionFetchOptions['metrics'], store: string): ChainPolicy {
  return { ...policy, onBytes: (_from, n) => m?.bytes.inc({ store }, n) }
}

/** A failed fetch's directory becomes the resume directory (its verified files), or goes. */
async function keepForResume(destDir: string, resumeDir: string | undefined): Promise<void> {
  if (resumeDir !== undefined) {
    try {
      await rm(resumeDir, { recursive: true, force: true, maxRetries: 3 })
      // Never complete: a resume directory is not a version; partial files are not kept.
      await rm(join(destDir, METADATA_FILE), { force: true })
      for (const name of await readdir(destDir)) if (name.endsWith('.part')) await rm(join(destDir, name), { force: true })
      await rename(destDir, resumeDir)
      return
    } catch {
      // Not kept: the next fetch moves every byte again.
    }
  }
  await rm(destDir, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined)
}
