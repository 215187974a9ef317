import { rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Gauge, type Registry } from 'prom-client'
import { StoreError } from '../../common/errors'
import { fetchVersion, type FetchProgress } from '../../fetcher/fetch-job'
import { isPartitionedSource } from '../../fetcher/source-format'
import { registerFetchMetrics, type FetchMetrics } from '../../fetcher/fetch-metrics'
import { fetchPartitions, type FetchFrom, type PartitionFetchResult } from '../../fetcher/partition-fetch'
import type { PartitionPeer } from '../../fetcher/sources/peer'
import type { NodeTls } from '../../cluster/cluster'
import { MANIFEST_FILE, parsePartitionFileName } from '../../formats/store/layout/partition-files'
import type { FetchingVersions } from './fetching-versions'
import { defaultFsCallLimit, FsGate } from '../../fetcher/transfer/fs-gate'
import { checkSource } from '../../fetcher/sources/open-source'
import { TokenBucket } from '../../fetcher/transfer/token-bucket'
import { installResult, type InstallResult, type StoreVersions } from '../../swapper/store-versions'
import type { ServingMirror } from '../../swapper/serving-mirror'

/** A format-2 fetch: where each held partition's files may come from (docs/API.md, "Fetch by partition"). */
export interface PartitionRequest {
  readonly fetchFrom: FetchFrom
  /** Peers by node id, resolved through the node's address book; tried in this order. */
  readonly peers: readonly { readonly nodeId: number; readonly version?: number; readonly partitions?: readonly number[] }[]
  /** The version manifest, given inline (a rebalance's). */
  readonly manifest?: Buffer
}

export interface FetchRequest {
  readonly sv: StoreVersions<ServingMirror>
  /** The build output root; absent only for a format-2 fetch from peers. */
  readonly source?: string
  /** Present: a format-2 fetch. */
  readonly partitions?: PartitionRequest
  readonly version?: number
  readonly maxBytesPerSec?: number
  readonly signal: AbortSignal
  readonly onProgress: (p: unknown) => void
}

/** A fetched version, reported like an install; a format-2 fetch says where its bytes came from. */
export type FetchOutcome = InstallResult & {
  readonly bytesFrom?: PartitionFetchResult['bytesFrom']
  readonly filesFrom?: PartitionFetchResult['filesFrom']
  readonly notReadyWaits?: number
  /** Partitions made by patch, bytes of the patches, and patches that failed (their partitions came whole). */
  readonly patches?: PartitionFetchResult['patches']
  /** The partitions the node holds in the version. */
  readonly held?: readonly number[]
}

export type FetchRunner = (r: FetchRequest) => Promise<FetchOutcome>

export interface FetchRunnerOptions {
  readonly nodeId: number
  /** Node-wide byte rate shared by every fetch (protects live serving). */
  readonly maxBytesPerSec?: number
  readonly sources: SourceAccess
  readonly registry: Registry
  /** A download with no byte for this long is cut and retried; default the fetcher's (30 s). */
  readonly stallTimeoutMs?: number
  /** Format-2 fetches under way, served to peers (routes/peer-files.ts). */
  readonly fetching?: FetchingVersions
  /** A peer's address, by node id (the node's address book). */
  readonly peerAddress?: (nodeId: number) => { readonly host: string; readonly port: number } | undefined
  /** Sent to peers: the cluster's shared admin token. */
  readonly adminToken?: string
  /** Set: peers are asked over HTTPS with this CA and name. */
  readonly peerTls?: NodeTls
  /** "Not ready" answers waited out per peer before the next source; default the fetcher's. */
  readonly notReadyWaits?: number
}

/**
 * What an admin operation may read: the `--allowed-source` list, applied to every path
 * and URL an admin request names (fetch sources, install paths), and the node-wide bound
 * on the blocking file-system calls made on sources (fetcher/transfer/fs-gate.ts).
 */
export class SourceAccess {
  readonly gate: FsGate

  constructor(
    /** Prefixes (paths, file://, http(s)://); undefined: anything the node can reach. */
    readonly allowedSources: readonly string[] | undefined,
    fsCallLimit = defaultFsCallLimit(),
  ) {
    this.gate = new FsGate(fsCallLimit)
  }

  /** A fetch source: RO_BAD_REQUEST when malformed, of an unknown scheme, or not allowed. */
  async checkFetchSource(source: string, signal: AbortSignal): Promise<void> {
    await checkSource(source, this.options(signal))
  }

  /**
   * An install's node directory, with its symlinks resolved (what is then copied from):
   * RO_BAD_REQUEST unless it lies under an allowed path. With an allow-list of URLs only,
   * no local path is allowed.
   */
  async resolveInstallPath(path: string, signal: AbortSignal): Promise<string> {
    const c = await checkSource(path, this.options(signal))
    if (c.kind !== 'file') throw new StoreError('RO_BAD_REQUEST', 'path must be the absolute path of a node directory')
    return c.key
  }

  private options(signal: AbortSignal): { allowedSources?: readonly string[]; gate: FsGate; signal: AbortSignal } {
    return { gate: this.gate, signal, ...(this.allowedSources === undefined ? {} : { allowedSources: this.allowedSources }) }
  }
}

function registerGateGauges(registry: Registry, gate: FsGate): void {
  if (registry.getSingleMetric('rostore_fetch_source_fs_calls') !== undefined) return
  new Gauge({
    name: 'rostore_fetch_source_fs_calls',
    help: 'File-system calls on fetch sources holding a pool thread now, by state (running, or abandoned: their fetch gave up, the call is still stuck)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const s = gate.stats
      this.set({ state: 'running' }, s.inFlight - s.abandoned)
      this.set({ state: 'abandoned' }, s.abandoned)
    },
  })
}

/**
 * Fetch a version from a build output into a `.tmp-fetch-*` staging directory of the
 * store, then verify it and rename it to `version-<V>` (StoreVersions.adopt). A fetch that
 * fails (in a store that has a version already) leaves what it verified in the store's `.resume-fetch` directory, and the next
 * fetch of the same build takes it over (fetcher/resume-dir.ts): one such directory per
 * store, replaced by the next failure and discarded by a fetch of another build. The
 * staging directory is removed whatever happens; a crash leaves it to startup recovery.
 */
export const RESUME_DIR = '.resume-fetch'
/** A failed format-2 fetch's verified files, taken by the next fetch of the same data (fetcher/partition-fetch.ts). */
export const PARTITION_RESUME_DIR = '.resume-partitions'

export function createFetchRunner(opts: FetchRunnerOptions): FetchRunner {
  const bucket = opts.maxBytesPerSec === undefined ? undefined : new TokenBucket(opts.maxBytesPerSec)
  const metrics = registerFetchMetrics(opts.registry)
  registerGateGauges(opts.registry, opts.sources.gate)
  return async (r) => {
    const t0 = performance.now()
    const staging = r.sv.stagingPath('fetch')
    if (r.partitions !== undefined) return fetchByPartition(opts, bucket, metrics, r, r.partitions, staging, t0)
    if (r.source === undefined) throw new StoreError('RO_BAD_REQUEST', 'source is required')
    // A fetch naming only a build output of format 2: this node's partitions, all from it.
    const probe = {
      signal: r.signal,
      gate: opts.sources.gate,
      ...(opts.sources.allowedSources === undefined ? {} : { allowedSources: opts.sources.allowedSources }),
    }
    if (await isPartitionedSource(r.source, probe))
      return fetchByPartition(opts, bucket, metrics, r, { fetchFrom: 'source', peers: [] }, staging, t0)
    try {
      const manifest = await fetchVersion({
        source: r.source,
        nodeId: opts.nodeId,
        destDir: staging,
        // A store's first fetch keeps nothing: a failed one leaves no store behind.
        ...(r.sv.versions().length > 0 ? { resumeDir: join(dirname(staging), RESUME_DIR) } : {}),
        maxBytesPerSec: r.maxBytesPerSec,
        bucket,
        signal: r.signal,
        allowedSources: opts.sources.allowedSources,
        fsGate: opts.sources.gate,
        ...(opts.stallTimeoutMs === undefined ? {} : { stallTimeoutMs: opts.stallTimeoutMs }),
        expect: { store: r.sv.store, ...(r.version === undefined ? {} : { version: r.version }) },
        metrics,
        onProgress: (p: FetchProgress) => r.onProgress(progressJson(p)),
      })
      return installResult(await r.sv.adopt(staging, { signal: r.signal, expectVersion: manifest.version }), t0)
    } finally {
      await rm(staging, { recursive: true, force: true }).catch(() => undefined)
    }
  }
}

function progressJson(p: FetchProgress): Record<string, unknown> {
  return {
    bytesDone: p.bytesDone,
    bytesTotal: p.bytesTotal,
    rateBytesPerSec: Math.round(p.rateBytesPerSec),
    etaSeconds: p.etaSeconds,
    retries: p.retries,
    checksumFailures: p.checksumFailures,
  }
}

/**
 * A format-2 fetch into staging: held files from installed versions of the same data
 * (hardlinks), the named peers, the build output; served to other peers while it runs.
 */
async function fetchByPartition(
  opts: FetchRunnerOptions,
  bucket: TokenBucket | undefined,
  metrics: FetchMetrics,
  r: FetchRequest,
  pr: PartitionRequest,
  staging: string,
  t0: number,
): Promise<FetchOutcome> {
  const scheme = opts.peerTls === undefined ? 'http' : 'https'
  const peers: PartitionPeer[] = pr.peers.map((p) => {
    const addr = opts.peerAddress?.(p.nodeId)
    if (addr === undefined) throw new StoreError('RO_BAD_REQUEST', `peer node ${p.nodeId} is not in this node's cluster file nor learned`)
    const host = addr.host.includes(':') ? `[${addr.host}]` : addr.host
    return { ...p, url: `${scheme}://${host}:${addr.port}` }
  })
  let unregister: (() => void) | undefined
  try {
    const fetched = await fetchPartitions({
      ...(r.source === undefined ? {} : { source: r.source }),
      fetchFrom: pr.fetchFrom,
      peers,
      ...(pr.manifest === undefined ? {} : { manifest: pr.manifest }),
      ...(opts.adminToken === undefined ? {} : { peerToken: opts.adminToken }),
      ...(opts.peerTls === undefined ? {} : { peerTls: opts.peerTls }),
      ...(opts.notReadyWaits === undefined ? {} : { notReadyWaits: opts.notReadyWaits }),
      reuseDirs: r.sv.versions().map((v) => r.sv.versionDir(v)),
      ...(r.sv.liveVersion === undefined ? {} : { liveDir: r.sv.versionDir(r.sv.liveVersion) }),
      // As in format 1, a store's first fetch keeps nothing: a failed one leaves no store behind.
      ...(r.sv.versions().length > 0 ? { resumeDir: join(dirname(staging), PARTITION_RESUME_DIR) } : {}),
      nodeId: opts.nodeId,
      destDir: staging,
      maxBytesPerSec: r.maxBytesPerSec,
      bucket,
      signal: r.signal,
      allowedSources: opts.sources.allowedSources,
      fsGate: opts.sources.gate,
      ...(opts.stallTimeoutMs === undefined ? {} : { stallTimeoutMs: opts.stallTimeoutMs }),
      expect: { store: r.sv.store, ...(r.version === undefined ? {} : { version: r.version }) },
      metrics,
      onStarted: (view) => {
        const names = new Set([MANIFEST_FILE, ...view.files.map((f) => f.name)])
        unregister = opts.fetching?.add(r.sv.store, view.version, { dir: staging, names })
      },
      onProgress: (p: FetchProgress) => r.onProgress(progressJson(p)),
    })
    // Files a patch rebuild made were checksummed as written: the verify does not read them again.
    const made = new Set(fetched.patches.partitions)
    const rebuilt = new Set(fetched.meta.files.filter((f) => made.has(parsePartitionFileName(f.name)?.partition ?? -1)).map((f) => f.name))
    const meta = await r.sv.adopt(staging, { signal: r.signal, expectVersion: fetched.meta.version, rebuilt })
    return {
      ...installResult(meta, t0),
      bytesFrom: fetched.bytesFrom,
      filesFrom: fetched.filesFrom,
      notReadyWaits: fetched.notReadyWaits,
      patches: fetched.patches,
      held: meta.held ?? [],
    }
  } finally {
    unregister?.()
    await rm(staging, { recursive: true, force: true }).catch(() => undefined)
  }
}
