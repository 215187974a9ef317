import type { ServerResponse } from 'node:http'
import type { StoreVersions } from '../../swapper/store-versions'
import { sizeOf } from '../../swapper/store-versions'
import type { ServingMirror } from '../../swapper/serving-mirror'
import type { AppContext, ReadContext } from '../context'
import { sendJson } from '../http-util'
import { controlRoute, readRoute } from './route'

/** Public routes about the node itself: health, status, metrics. */
export const NODE_INFO_ROUTES = [
  readRoute({ path: '/health', methods: ['GET', 'HEAD'], access: 'public', op: 'health', handle: (ctx, _req, res) => health(ctx, res) }),
  controlRoute({ path: '/status', methods: ['GET'], access: 'public', op: 'status', handle: (ctx, _req, res) => status(ctx, res) }),
  controlRoute({ path: '/metrics', methods: ['GET'], access: 'public', op: 'metrics', handle: (ctx, _req, res) => metrics(ctx, res) }),
]

function health(ctx: ReadContext, res: ServerResponse): void {
  if (ctx.shuttingDown()) sendJson(res, 503, { status: 'shutting-down' })
  else sendJson(res, 200, { status: 'ok', nodeId: ctx.nodeId })
}

async function storeStatus(sv: StoreVersions<ServingMirror>): Promise<Record<string, unknown>> {
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
    ...(sv.loadError ? { error: sv.loadError, pointer: live ?? null } : {}),
  }
}

async function status(ctx: AppContext, res: ServerResponse): Promise<void> {
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
    ...(ctx.workers ? { workers: ctx.workers() } : {}),
    stores: await Promise.all(ctx.dataDir.all().map(storeStatus)),
    jobs: { running: ctx.jobs.running().length },
  })
}

async function metrics(ctx: AppContext, res: ServerResponse): Promise<void> {
  const { contentType, body } = await (ctx.renderMetrics ?? (() => ctx.metrics.render()))()
  res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' })
  res.end(body)
}
