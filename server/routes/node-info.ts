import type { ServerResponse } from 'node:http'
import { compressionInfo } from '../../formats/store/layout/compression-info'
import type { ResidencyStats } from '../../formats/store/read/store-reader-api'
import type { StoreVersions } from '../../swapper/store-versions'
import { sizeOf } from '../../swapper/store-versions'
import type { ServingMirror } from '../../swapper/serving-mirror'
import type { AppContext, ReadContext } from '../context'
import { sendJson } from '../http/http-util'
import { controlRoute, readRoute } from './route'

/**
 * Routes about the node itself: health, status, metrics (public; metrics behind its own
 * token when one is configured), and the admin status.
 * The public ones show no paths, process ids or error texts (those name files of the data
 * directory): an unauthenticated caller learns what a client needs and no more. The admin
 * status adds them.
 */
export const NODE_INFO_ROUTES = [
  readRoute({ path: '/health', methods: ['GET', 'HEAD'], access: 'public', op: 'health', handle: (ctx, _req, res) => health(ctx, res) }),
  controlRoute({ path: '/status', methods: ['GET'], access: 'public', op: 'status', handle: (ctx, _req, res) => status(ctx, res) }),
  controlRoute({ path: '/metrics', methods: ['GET'], access: 'metrics', op: 'metrics', handle: (ctx, _req, res) => metrics(ctx, res) }),
  controlRoute({
    path: '/admin/status',
    methods: ['GET'],
    access: 'admin',
    op: 'admin_status',
    handle: (ctx, _req, res) => adminStatus(ctx, res),
  }),
]

function health(ctx: ReadContext, res: ServerResponse): void {
  if (ctx.shuttingDown()) sendJson(res, 503, { status: 'shutting-down' })
  else sendJson(res, 200, { status: 'ok', nodeId: ctx.nodeId })
}

async function storeStatus(sv: StoreVersions<ServingMirror>, admin: boolean): Promise<Record<string, unknown>> {
  const live = sv.liveVersion
  const versions = sv.versions()
  const meta = sv.liveMetadata
  return {
    store: sv.store,
    version: sv.serving.activeVersion ?? null,
    versions,
    backups: live === undefined ? [] : versions.filter((v) => v < live),
    newer: live === undefined ? versions : versions.filter((v) => v > live),
    records: meta?.records ?? null,
    sizeBytes: meta ? sizeOf(meta) : null,
    stale: sv.stale ?? false,
    draining: await sv.serving.draining(),
    accessMode: (await sv.serving.accessMode()) ?? null,
    compression: meta ? compressionInfo(meta) : null,
    coldReads: residencyStatus(await sv.serving.residency()),
    // The load error names files of the data directory: its text is for admins only.
    ...(sv.loadError ? { error: admin ? sv.loadError : 'the live version could not be opened', pointer: live ?? null } : {}),
  }
}

/**
 * What /status says of a store's reads from memory and from the disk (docs/SERVING.md,
 * "Stores larger than memory"): the share of the data in the page cache, the page-cache
 * hit ratio of lookups, cold reads in flight and the pages read per cold lookup.
 */
function residencyStatus(r: ResidencyStats | undefined): Record<string, unknown> | null {
  if (!r) return null
  return {
    residentFraction: r.pages === 0 ? 1 : round(r.residentPages / r.pages),
    lookups: r.reads,
    coldLookups: r.coldReads,
    hitRatio: r.reads === 0 ? null : round(1 - r.coldReads / r.reads),
    inFlight: r.coldInFlight,
    pagesReadPerColdLookup: r.coldReads === 0 ? null : round(r.pagesRead / r.coldReads),
    indexLocked: r.indexLocked,
    io: r.io,
  }
}

function round(x: number): number {
  return Math.round(x * 10000) / 10000
}

/**
 * corruptReads: reads that found this node's copy damaged (clients read other replicas).
 * behind: the version the last push record says this node should serve, when it serves
 * another (the store is then stale); repair: this node fetching and swapping to it.
 */
async function healthStatus(ctx: AppContext, sv: StoreVersions<ServingMirror>): Promise<Record<string, unknown>> {
  const r = sv.pushRecord
  return {
    corruptReads: (await sv.serving.corruptReads()) ?? null,
    behind: sv.behind ?? null,
    lastPush: r ? { version: r.version, missed: r.missed, at: r.at } : null,
    repair: ctx.peers?.repairStatus(sv.store) ?? null,
  }
}

function nodeStatus(ctx: AppContext): Record<string, unknown> {
  const { host, port } = ctx.address()
  return {
    id: ctx.nodeId,
    cluster: ctx.cluster.name,
    host,
    port,
    uptimeSeconds: Math.round((Date.now() - ctx.startedAt) / 1000),
    shuttingDown: ctx.shuttingDown(),
    adminEnabled: ctx.auth.enabled,
    keepVersions: ctx.keepVersions,
    preload: ctx.preload,
  }
}

async function status(ctx: AppContext, res: ServerResponse): Promise<void> {
  sendJson(res, 200, {
    node: nodeStatus(ctx),
    ...(ctx.workers ? { workers: ctx.workers() } : {}),
    stores: await Promise.all(
      ctx.dataDir.all().map(async (sv) => ({ ...(await storeStatus(sv, false)), ...(await healthStatus(ctx, sv)) })),
    ),
    peerCheck: ctx.peers?.summary() ?? null,
    jobs: { running: ctx.jobs.running().length },
  })
}

/** /status plus what only an operator should see: process, paths, error texts, limits. */
async function adminStatus(ctx: AppContext, res: ServerResponse): Promise<void> {
  sendJson(res, 200, {
    node: {
      ...nodeStatus(ctx),
      pid: process.pid,
      node: process.version,
      dataDir: ctx.dataDir.dir,
      allowedSources: ctx.sources.allowedSources ?? null,
      sourceFsCalls: ctx.sources.gate.stats,
    },
    ...(ctx.workers ? { workers: ctx.workers() } : {}),
    stores: await Promise.all(
      ctx.dataDir.all().map(async (sv) => ({ ...(await storeStatus(sv, true)), ...(await healthStatus(ctx, sv)) })),
    ),
    peerCheck: ctx.peers?.summary() ?? null,
    jobs: { running: ctx.jobs.running().length },
  })
}

async function metrics(ctx: AppContext, res: ServerResponse): Promise<void> {
  const { contentType, body } = await (ctx.renderMetrics ?? (() => ctx.metrics.render()))()
  res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' })
  res.end(body)
}
