import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AppContext } from '../context'
import { badRequest, onlyFields, queryOf, readJsonObject, sendJson } from '../http/http-util'
import { controlRoute } from './route'
import { knownStore } from './store-access'

/** Admin routes that control the node: jobs, rescan, stale marks, push leases. */
export const ADMIN_CONTROL_ROUTES = [
  controlRoute({
    path: '/admin/jobs',
    methods: ['GET'],
    access: 'admin',
    op: 'admin_jobs',
    handle: (ctx, _req, res) => listJobs(ctx, res),
  }),
  controlRoute({
    path: '/admin/jobs/:job',
    methods: ['GET'],
    access: 'admin',
    op: 'admin_job',
    handle: (ctx, req, res, p) => getJob(ctx, p.job, req, res),
  }),
  controlRoute({
    path: '/admin/jobs/:job/cancel',
    methods: ['POST'],
    access: 'admin',
    op: 'admin_cancel',
    handle: (ctx, _req, res, p) => sendJson(res, 202, ctx.jobs.cancel(p.job)),
  }),
  controlRoute({
    path: '/admin/rescan',
    methods: ['POST'],
    access: 'admin',
    op: 'admin_rescan',
    handle: (ctx, _req, res) => rescan(ctx, res),
  }),
  controlRoute({
    path: '/admin/stores/:store/stale',
    methods: ['PUT', 'DELETE'],
    access: 'admin',
    op: 'admin_stale',
    handle: (ctx, req, res, p) => stale(ctx, p.store, req, res),
  }),
  controlRoute({
    path: '/admin/stores/:store/lock',
    methods: ['GET', 'POST', 'DELETE'],
    access: 'admin',
    op: 'admin_lock',
    handle: (ctx, req, res, p) => pushLock(ctx, p.store, req, res),
  }),
]

function listJobs(ctx: AppContext, res: ServerResponse): void {
  sendJson(res, 200, { jobs: ctx.jobs.list() })
}

/** The longest `waitMs` of a job poll: a connection held longer would only tie up the admin port. */
export const MAX_JOB_WAIT_MS = 10_000

/** `?waitMs=N`: answer when the job ends or after N ms, whichever comes first (a long poll). */
async function getJob(ctx: AppContext, id: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = queryOf(req, ['waitMs']).get('waitMs')
  const waitMs = raw === null ? 0 : Number(raw)
  if (!/^\d{1,6}$/.test(raw ?? '0') || waitMs > MAX_JOB_WAIT_MS)
    throw badRequest(`waitMs must be a whole number of ms from 0 to ${MAX_JOB_WAIT_MS}`)
  // RO_NOT_FOUND for an unknown job, as without a wait.
  sendJson(res, 200, await ctx.jobs.waitUpTo(id, waitMs))
}

async function rescan(ctx: AppContext, res: ServerResponse): Promise<void> {
  const added = await ctx.dataDir.rescan()
  sendJson(res, 200, { added })
}

async function stale(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const sv = knownStore(ctx, store)
  if (req.method === 'DELETE') {
    await sv.setStale(undefined)
    sendJson(res, 200, { store, stale: false })
    return
  }
  const body = await readJsonObject(req)
  onlyFields(body, ['reason'])
  const reason = body['reason'] ?? 'marked stale by an operator'
  if (typeof reason !== 'string' || reason.length > 1024) throw badRequest('reason must be a string of at most 1024 characters')
  const mark = await sv.setStale(reason)
  sendJson(res, 200, { store, stale: mark })
}

/**
 * The lease a cluster push holds on the store while it runs (server/peers/push-lock.ts): GET
 * shows it, POST takes it (`renew: true` extends one still held), DELETE releases it, or
 * breaks it whoever holds it with `{"break": true}` (an operator, for a push that is gone).
 */
async function pushLock(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'GET') {
    const lease = ctx.pushLocks.view(store)
    sendJson(res, 200, lease ? { store, locked: true, ...lease } : { store, locked: false })
    return
  }
  const body = await readJsonObject(req)
  if (req.method === 'DELETE' && body['break'] !== undefined) {
    onlyFields(body, ['break'])
    if (body['break'] !== true) throw badRequest('break must be true')
    const broken = ctx.pushLocks.breakLease(store)
    ctx.log.warn('push-lock-broken', { store, owner: broken ?? null })
    sendJson(res, 200, { store, locked: false, broken: broken ?? null })
    return
  }
  onlyFields(body, ['owner', 'ttlMs', 'renew'])
  const owner = body['owner']
  if (typeof owner !== 'string' || !/^[A-Za-z0-9._:-]{1,128}$/.test(owner))
    throw badRequest('owner must be 1-128 characters of [A-Za-z0-9._:-]')
  if (req.method === 'DELETE') {
    if (body['ttlMs'] !== undefined || body['renew'] !== undefined) throw badRequest('a release takes only the owner')
    ctx.pushLocks.release(store, owner)
    sendJson(res, 200, { store, locked: false })
    return
  }
  const ttl = body['ttlMs']
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1000 || ttl > 7 * 24 * 3600_000) {
    throw badRequest('ttlMs must be an integer from 1000 to 604800000')
  }
  const renew = body['renew']
  if (renew !== undefined && typeof renew !== 'boolean') throw badRequest('renew must be true or false')
  const lease = renew ? ctx.pushLocks.renew(store, owner, ttl) : ctx.pushLocks.acquire(store, owner, ttl)
  sendJson(res, 200, { store, locked: true, ...lease })
}
