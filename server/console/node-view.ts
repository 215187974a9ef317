import { statfs } from 'node:fs/promises'
import { buildRing, replicaNodes } from '../../cluster/routing'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import type { StoreVersions } from '../../swapper/store-versions'
import { sizeOf } from '../../swapper/store-versions'
import type { ServingMirror } from '../../swapper/serving-mirror'
import type { AppContext } from '../context'
import type { JobView } from '../jobs/jobs'
import type { ConsoleServices } from './console-services'
import type { NodeEvent } from './event-ring'
import { sumCounters } from './node-sampler'

/**
 * What one node tells the console about itself (`GET /ui/node.json`): no paths, no
 * process ids, no sources, no error texts, only numbers, names checked on the way in, and
 * the node's own events. Lists are bounded so the answer stays small.
 */
export interface NodeView {
  readonly id: number
  readonly cluster: string
  readonly host: string
  readonly port: number
  readonly uptimeSeconds: number
  readonly shuttingDown: boolean
  readonly workers: { readonly configured: number; readonly serving: number; readonly restarts: number }
  readonly disk: { readonly freeBytes: number; readonly totalBytes: number } | null
  readonly rssBytes: number | null
  /** Keys read per second over the last seconds (null on the first look). */
  readonly readsPerSec: number | null
  readonly peerCheck: string | null
  readonly stores: readonly StoreView[]
  readonly jobs: readonly JobSummary[]
  readonly events: readonly NodeEvent[]
}

export interface StoreView {
  readonly store: string
  readonly live: number | null
  /** Older versions kept for rollback. */
  readonly backups: readonly number[]
  /** Versions fetched and not live yet. */
  readonly newer: readonly number[]
  readonly records: number | null
  readonly sizeBytes: number | null
  readonly stale: boolean
  /** The version the last push record says this node should serve, when it serves another. */
  readonly behind: number | null
  readonly accessMode: string | null
  readonly corruptReads: number
  readonly readsPerSec: number | null
  readonly layout: LayoutView | null
}

/** Where the live version puts each partition: per node, the partitions it holds (master or replica). */
export interface LayoutView {
  readonly partitions: number
  readonly replication: number
  readonly nodes: readonly { readonly id: number; readonly masters: readonly number[]; readonly holds: readonly number[] }[]
}

export interface JobSummary {
  readonly id: string
  readonly kind: string
  readonly store: string
  /** The version the job brings in, when it was known at its start. */
  readonly version: number | null
  readonly state: string
  readonly createdAt: string
  readonly finishedAt: string | null
  readonly progress: {
    readonly bytesDone: number
    readonly bytesTotal: number
    readonly rateBytesPerSec: number | null
    readonly etaSeconds: number | null
  } | null
  readonly errorCode: string | null
}

const MAX_STORES = 64
const MAX_JOBS = 12
const MAX_EVENTS = 60
/** Past this many partitions a layout is summarized (counts only). */
const MAX_LAYOUT_PARTITIONS = 1024
/** Finished jobs stay on the console this long. */
const FINISHED_JOB_MS = 10 * 60_000

export async function nodeView(ctx: AppContext, con: ConsoleServices): Promise<NodeView> {
  const now = Date.now()
  const { host, port } = ctx.address()
  const sums = sumCounters((await (ctx.renderMetrics ?? (() => ctx.metrics.render()))()).body)
  const rates = con.sampler.sample(sums, now, con.events)
  const stores = await Promise.all(
    ctx.dataDir
      .all()
      .slice(0, MAX_STORES)
      .map((sv) => storeView(sv, con, rates.byStore, rates.total !== null)),
  )
  return {
    id: ctx.nodeId,
    cluster: ctx.cluster.name,
    host,
    port,
    uptimeSeconds: Math.round((now - ctx.startedAt) / 1000),
    shuttingDown: ctx.shuttingDown(),
    workers: ctx.workers ? ctx.workers() : { configured: 1, serving: 1, restarts: 0 },
    disk: await diskOf(ctx.dataDir.dir),
    rssBytes: sums.rssBytes ?? process.memoryUsage().rss,
    readsPerSec: rates.total === null ? null : round1(rates.total),
    peerCheck: ctx.peers?.summary().state ?? null,
    stores,
    jobs: jobSummaries(ctx.jobs.list(), now),
    events: con.events.recent(MAX_EVENTS),
  }
}

async function storeView(
  sv: StoreVersions<ServingMirror>,
  con: ConsoleServices,
  rates: ReadonlyMap<string, number>,
  haveRates: boolean,
): Promise<StoreView> {
  const live = sv.liveVersion
  const versions = sv.versions()
  const corrupt = await sv.serving.corruptReads()
  if (corrupt) con.sampler.noteCorrupt(sv.store, corrupt.count, corrupt.lastCode, corrupt.lastAt, con.events)
  const meta = sv.liveMetadata
  return {
    store: sv.store,
    live: sv.serving.activeVersion ?? null,
    backups: live === undefined ? [] : versions.filter((x) => x < live).slice(-16),
    newer: live === undefined ? versions.slice(-16) : versions.filter((x) => x > live).slice(-16),
    records: meta?.records ?? null,
    sizeBytes: meta ? sizeOf(meta) : null,
    stale: sv.stale !== undefined,
    behind: sv.behind ?? null,
    accessMode: (await sv.serving.accessMode()) ?? null,
    corruptReads: corrupt?.count ?? 0,
    readsPerSec: haveRates ? round1(rates.get(sv.store) ?? 0) : null,
    layout: meta ? layoutOf(meta) : null,
  }
}

function layoutOf(meta: StoreMetadata): LayoutView | null {
  try {
    const ring = buildRing(meta.layout)
    const small = ring.partitionCount <= MAX_LAYOUT_PARTITIONS
    const holds = new Map<number, number[]>(meta.layout.map((n) => [n.id, []]))
    if (small) {
      for (let p = 0; p < ring.partitionCount; p++) {
        for (const id of replicaNodes(ring, p, meta.replication)) holds.get(id)?.push(p)
      }
    }
    return {
      partitions: ring.partitionCount,
      replication: meta.replication,
      nodes: meta.layout.map((n) => ({
        id: n.id,
        masters: small ? [...n.partitions].sort((a, b) => a - b) : [],
        holds: holds.get(n.id) ?? [],
      })),
    }
  } catch {
    // A layout the ring refuses is shown as unknown rather than failing the whole view.
    return null
  }
}

function jobSummaries(jobs: readonly JobView[], now: number): JobSummary[] {
  const shown = jobs.filter(
    (j) => j.state === 'running' || (j.finishedAt !== undefined && now - Date.parse(j.finishedAt) < FINISHED_JOB_MS),
  )
  return shown.slice(-MAX_JOBS).map((j) => ({
    // The id's first group: enough to tell jobs apart, and an admin still needs the token to act on one.
    id: j.id.slice(0, 8),
    kind: j.kind,
    store: j.store,
    version: j.version ?? null,
    state: j.state,
    createdAt: j.createdAt,
    finishedAt: j.finishedAt ?? null,
    progress: progressOf(j.progress),
    errorCode: j.error?.code ?? null,
  }))
}

/** The byte counts of a fetch or install progress, whatever else it carries (file names are left out). */
function progressOf(p: unknown): JobSummary['progress'] {
  if (typeof p !== 'object' || p === null) return null
  const o = p as Record<string, unknown>
  const n = (k: string): number | null => (typeof o[k] === 'number' && Number.isFinite(o[k]) ? (o[k] as number) : null)
  const done = n('bytesDone')
  const total = n('bytesTotal')
  if (done === null || total === null) return null
  return { bytesDone: done, bytesTotal: total, rateBytesPerSec: n('rateBytesPerSec'), etaSeconds: n('etaSeconds') }
}

async function diskOf(dir: string): Promise<NodeView['disk']> {
  try {
    const s = await statfs(dir)
    return { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize }
  } catch {
    return null
  }
}

function round1(x: number): number {
  return Math.round(x * 10) / 10
}
