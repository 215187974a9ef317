import type { ServerResponse } from 'node:http'
import type { StoreVersions } from '../../swapper/store-versions'
import { sizeOf } from '../../swapper/store-versions'
import type { AppContext } from '../context'
import { sendJson } from '../http-util'
import { route } from './route'

/** Public routes about the node itself: health, status, metrics. */
export const NODE_INFO_ROUTES = [
  route({ path: '/health', methods: ['GET', 'HEAD'], access: 'public', op: 'health', handle: (ctx, _req, res) => health(ctx, res) }),
  route({ path: '/status', methods: ['GET'], access: 'public', op: 'status', handle: (ctx, _req, res) => status(ctx, res) }),
  route({ path: '/metrics', methods: ['GET'], access: 'public', op: 'metrics', handle: (ctx, _req, res) => metrics(ctx, res) }),
]

function health(ctx: AppContext, res: ServerResponse): void {
  if (ctx.shuttingDown()) sendJson(res, 503, { status: 'shutting-down' })
  else sendJson(res, 200, { status: 'ok', nodeId: ctx.nodeId })
}

function storeStatus(sv: StoreVersions): Record<string, unknown> {
  const live = sv.liveVersion
  const versions = sv.versions()
  const meta = sv.live.metadata
  return {
    store: sv.store,
    version: sv.live.version ?? null,
    versions,
    backups: live === undefined ? [] : versions.filter((v) => v < live),
    newer: live === undefined ? versions : versions.filter((v) => v > live),
    records: meta?.records ?? null,
    sizeBytes: meta ? sizeOf(meta) : null,
    stale: sv.stale ?? false,
    draining: sv.live.retiringCount,
    ...(sv.loadError ? { error: sv.loadError, pointer: live ?? null } : {}),
  }
}

/**
 * corruptReads: reads that found this node's copy damaged (clients read other replicas).
 * behind: the version the last push record says this node should serve, when it serves
 * another (the store is then stale); repair: this node fetching and swapping to it.
 */
function healthStatus(ctx: AppContext, sv: StoreVersions): Record<string, unknown> {
  const r = sv.pushRecord
  return {
    corruptReads: ctx.readFaults?.get(sv.store) ?? null,
    behind: sv.behind ?? null,
    lastPush: r ? { version: r.version, missed: r.missed, at: r.at } : null,
    repair: ctx.peers?.repairStatus(sv.store) ?? null,
  }
}

function status(ctx: AppContext, res: ServerResponse): void {
  const { host, port } = ctx.address()
  sendJson(res, 200, {
    node: {
      id: ctx.nodeId,
      cluster: ctx.cluster.name,
      host,
      port,
      pid: process.pid,
      uptimeSeconds: Math.round((Date.now() - ctx.startedAt) / 1000),
      shuttingDown: ctx.shuttingDown(),
      adminEnabled: ctx.auth.enabled,
      keepVersions: ctx.keepVersions,
    },
    stores: ctx.dataDir.all().map((sv) => ({ ...storeStatus(sv), ...healthStatus(ctx, sv) })),
    peerCheck: ctx.peers?.summary() ?? null,
    jobs: { running: ctx.jobs.running().length },
  })
}

async function metrics(ctx: AppContext, res: ServerResponse): Promise<void> {
  const { contentType, body } = await ctx.metrics.render()
  res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' })
  res.end(body)
}
