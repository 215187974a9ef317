import type { IncomingMessage, ServerResponse } from 'node:http'
import { isAbsolute } from 'node:path'
import { errorMessage, StoreError } from '../common/errors'
import type { Cluster } from '../cluster/cluster'
import { MAX_KEY_BYTES } from '../formats/input/types'
import type { DataDir } from '../swapper/data-dir'
import type { SwapResult } from '../swapper/events'
import type { StoreVersions } from '../swapper/swap'
import { sizeOf } from '../swapper/swap'
import { checkStoreName, parseVersionText, requestVersion } from '../swapper/versions'
import { AdminAuth, AdminDisabledError } from './auth'
import {
  badRequest,
  decodeNameSegment,
  errorResponse,
  HttpStatusError,
  MAX_URL_BYTES,
  onlyFields,
  percentDecodeBytes,
  readBody,
  readJsonObject,
  sendJson,
} from './http-util'
import { isJobId, type Jobs } from './jobs'
import type { Logger } from './log'
import type { NodeMetrics } from './metrics'
import { UNKNOWN_STORE } from './metrics'
import { decodeKeys, encodeValues, MAX_MULTIGET_BODY_BYTES } from '../formats/wire/multiget'
import type { FetchRunner } from './fetch-route'
import type { PushLocks } from './push-lock'

export interface AppContext {
  readonly nodeId: number
  readonly cluster: Cluster
  readonly dataDir: DataDir
  readonly auth: AdminAuth
  readonly metrics: NodeMetrics
  readonly jobs: Jobs
  readonly log: Logger
  readonly accessLog: boolean
  readonly startedAt: number
  readonly keepVersions: number
  readonly fetch?: FetchRunner
  readonly pushLocks: PushLocks
  readonly shuttingDown: () => boolean
  readonly address: () => { host: string; port: number }
}

/** What a handler tells the metrics about the request it served. */
interface RequestInfo {
  op: string
  store: string
}

type Handler = (req: IncomingMessage, res: ServerResponse, info: RequestInfo) => Promise<void> | void

const VERSION_HEADER = 'X-Rostore-Version'
/** Keys read per getMany call in a multi-get, between checks for back pressure. */
const MULTIGET_BATCH = 256
const MAX_PATH_LENGTH = 4096

/**
 * The node's HTTP API (docs/API.md). Plain node:http: one function routes on the raw
 * path, so percent-escapes are decoded exactly once, to bytes, by us.
 */
export interface RequestHandler {
  (req: IncomingMessage, res: ServerResponse): void
  /** Shutdown: responses not started yet will say "Connection: close". */
  closeConnectionsAfterResponse(): void
}

export function createRequestHandler(ctx: AppContext): RequestHandler {
  const inFlight = new Set<ServerResponse>()
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const started = process.hrtime.bigint()
    const info: RequestInfo = { op: 'unknown', store: '' }
    if (ctx.shuttingDown()) res.setHeader('Connection', 'close')
    inFlight.add(res)
    res.once('close', () => {
      inFlight.delete(res)
      const seconds = Number(process.hrtime.bigint() - started) / 1e9
      const store = info.store === '' ? '' : ctx.dataDir.get(info.store) ? info.store : UNKNOWN_STORE
      const status = res.headersSent ? res.statusCode : 499
      ctx.metrics.requests.inc({ store, op: info.op, status: String(status) })
      ctx.metrics.latency.observe({ store, op: info.op }, seconds)
      if (ctx.accessLog) {
        ctx.log.info('request', { method: req.method, op: info.op, store, status, ms: Math.round(seconds * 1e6) / 1000 })
      }
    })
    let handled: Promise<void> | void
    try {
      handled = route(ctx, req, res, info)
    } catch (err) {
      handled = Promise.reject(err)
    }
    Promise.resolve(handled).catch((err: unknown) => fail(ctx, req, res, info, err))
  }
  return Object.assign(handler, {
    closeConnectionsAfterResponse: () => {
      for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close')
    },
  })
}

function fail(ctx: AppContext, req: IncomingMessage, res: ServerResponse, info: RequestInfo, err: unknown): void {
  let status: number
  let body: unknown
  if (err instanceof AdminDisabledError) {
    status = 403
    body = { error: { code: 'RO_UNAUTHORIZED', message: err.message } }
  } else {
    const r = errorResponse(err)
    status = r.status
    body = r.body
  }
  const code = (body as { error: { code: string } }).error.code
  const store = info.store !== '' && ctx.dataDir.get(info.store) ? info.store : info.store === '' ? '' : UNKNOWN_STORE
  // Client mistakes and absent keys are not server errors; everything else is counted and logged.
  if ((status >= 500 && status !== 503) || code === 'RO_CORRUPT' || code === 'RO_CHECKSUM_MISMATCH' || code === 'RO_INTERNAL') {
    ctx.metrics.errors.inc({ store, code })
    ctx.log.error('request-failed', { op: info.op, store, status, code, error: errorMessage(err) })
  }
  if (res.headersSent) {
    // Mid-stream (multi-get): cut the connection so the client sees a broken response.
    res.destroy(err instanceof Error ? err : undefined)
    return
  }
  const headers: Record<string, string> = {}
  if (status === 401) headers['WWW-Authenticate'] = 'Bearer realm="rostore-admin"'
  // The request body may still be arriving (413, early 401): do not keep the connection.
  if (!req.complete) headers['Connection'] = 'close'
  sendJson(res, status, body, headers)
}

function route(ctx: AppContext, req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> | void {
  const url = req.url ?? '/'
  if (url.length > MAX_URL_BYTES) {
    info.op = 'too_long'
    sendJson(
      res,
      414,
      { error: { code: 'RO_TOO_LARGE', message: `the URL is longer than ${MAX_URL_BYTES} bytes` } },
      { Connection: 'close' },
    )
    return
  }
  const q = url.indexOf('?')
  const path = q < 0 ? url : url.slice(0, q)
  if (!path.startsWith('/')) throw badRequest('the request target must be a path')
  const seg = path.slice(1).split('/')
  const method = req.method ?? 'GET'
  const dispatch = (allowed: string[], handler: Handler): Promise<void> | void => {
    if (!allowed.includes(method)) {
      info.op = 'method'
      sendJson(
        res,
        405,
        { error: { code: 'RO_BAD_REQUEST', message: `method not allowed; use ${allowed.join(' or ')}` } },
        {
          Allow: allowed.join(', '),
          ...(req.complete ? {} : { Connection: 'close' }),
        },
      )
      return
    }
    return handler(req, res, info)
  }
  const [s0, s1, s2, s3] = seg
  if (path.length > MAX_PATH_LENGTH && s0 !== 'stores') throw badRequest('path too long')

  // --- public ---------------------------------------------------------------------
  if (seg.length === 1 && s0 === 'health') return dispatch(['GET', 'HEAD'], (_q, r, i) => health(ctx, r, i))
  if (seg.length === 1 && s0 === 'status') return dispatch(['GET'], (_q, r, i) => status(ctx, r, i))
  if (seg.length === 1 && s0 === 'metrics') return dispatch(['GET'], (_q, r, i) => metrics(ctx, r, i))
  if (s0 === 'stores') {
    if (seg.length === 1 || (seg.length === 2 && s1 === '')) return dispatch(['GET'], (_q, r, i) => listStores(ctx, r, i))
    if (s1 === undefined) throw badRequest('missing store name')
    info.op = 'store'
    const store = checkStoreName(decodeNameSegment(s1))
    info.store = store
    if (seg.length === 2) return dispatch(['GET'], (_q, r, i) => storeMetadata(ctx, store, r, i))
    if (s2 === 'keys' && seg.length >= 4) {
      // The key is everything after /keys/, so a raw '/' in it is tolerated.
      const rawKey = seg.slice(3).join('/')
      return dispatch(['GET', 'HEAD'], (_q, r, i) => getKey(ctx, store, rawKey, r, i))
    }
    if (s2 === 'multi-get' && seg.length === 3) return dispatch(['POST'], (q2, r, i) => multiGet(ctx, store, q2, r, i))
    throw new StoreError('RO_NOT_FOUND', `no route ${method} ${path.slice(0, 200)}`)
  }

  // --- admin: authenticate before looking at anything else --------------------------
  if (s0 === 'admin') {
    info.op = 'admin'
    ctx.auth.check(req)
    if (s1 === 'jobs') {
      if (seg.length === 2) return dispatch(['GET'], (_q, r, i) => listJobs(ctx, r, i))
      const id = decodeNameSegment(s2 ?? '')
      if (!isJobId(id)) throw badRequest('invalid job id')
      if (seg.length === 3) return dispatch(['GET'], (_q, r, i) => getJob(ctx, id, r, i))
      if (seg.length === 4 && s3 === 'cancel') return dispatch(['POST'], (_q, r, i) => cancelJob(ctx, id, r, i))
    }
    if (s1 === 'rescan' && seg.length === 2) return dispatch(['POST'], (_q, r, i) => rescan(ctx, r, i))
    if (s1 === 'stores' && s2 !== undefined && seg.length >= 4) {
      const store = checkStoreName(decodeNameSegment(s2))
      info.store = store
      const action = seg.slice(3)
      const a0 = action[0]
      if (action.length === 1 && a0 === 'versions') return dispatch(['GET'], (_q, r, i) => listVersions(ctx, store, r, i))
      if (action.length === 2 && a0 === 'versions') {
        const v = parseVersionText(decodeNameSegment(action[1] ?? ''))
        if (v === undefined) throw badRequest('invalid version: a positive integer')
        return dispatch(['DELETE'], (_q, r, i) => deleteVersion(ctx, store, v, r, i))
      }
      if (action.length === 1 && a0 === 'install') return dispatch(['POST'], (q2, r, i) => install(ctx, store, q2, r, i))
      if (action.length === 1 && a0 === 'fetch') return dispatch(['POST'], (q2, r, i) => fetchRoute(ctx, store, q2, r, i))
      if (action.length === 1 && a0 === 'swap') return dispatch(['POST'], (q2, r, i) => swap(ctx, store, q2, r, i))
      if (action.length === 1 && a0 === 'rollback') return dispatch(['POST'], (q2, r, i) => rollback(ctx, store, q2, r, i))
      if (action.length === 1 && a0 === 'stale') return dispatch(['PUT', 'DELETE'], (q2, r, i) => stale(ctx, store, q2, r, i))
      if (action.length === 1 && a0 === 'lock') return dispatch(['POST', 'DELETE'], (q2, r, i) => pushLock(ctx, store, q2, r, i))
    }
    throw new StoreError('RO_NOT_FOUND', `no admin route ${method} ${path.slice(0, 200)}`)
  }
  throw new StoreError('RO_NOT_FOUND', `no route ${method} ${path.slice(0, 200)}`)
}

// ---------------------------------------------------------------------------------------
// public routes

function health(ctx: AppContext, res: ServerResponse, info: RequestInfo): void {
  info.op = 'health'
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

function status(ctx: AppContext, res: ServerResponse, info: RequestInfo): void {
  info.op = 'status'
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
    stores: ctx.dataDir.all().map(storeStatus),
    jobs: { running: ctx.jobs.running().length },
  })
}

async function metrics(ctx: AppContext, res: ServerResponse, info: RequestInfo): Promise<void> {
  info.op = 'metrics'
  const { contentType, body } = await ctx.metrics.render()
  res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' })
  res.end(body)
}

function listStores(ctx: AppContext, res: ServerResponse, info: RequestInfo): void {
  info.op = 'stores'
  sendJson(res, 200, {
    stores: ctx.dataDir.all().map((s) => ({ store: s.store, version: s.live.version ?? null, stale: s.stale !== undefined })),
  })
}

function knownStore(ctx: AppContext, store: string): StoreVersions {
  const sv = ctx.dataDir.get(store)
  if (!sv) throw new StoreError('RO_NOT_FOUND', `no store ${store} on this node`)
  return sv
}

function checkServable(sv: StoreVersions): void {
  if (sv.stale) throw new StoreError('RO_UNAVAILABLE', `store ${sv.store} is marked stale on this node: ${sv.stale.reason}`)
}

function noLiveVersion(sv: StoreVersions): StoreError {
  return new StoreError('RO_UNAVAILABLE', `store ${sv.store} has no live version on this node${sv.loadError ? ` (${sv.loadError})` : ''}`)
}

function storeMetadata(ctx: AppContext, store: string, res: ServerResponse, info: RequestInfo): void {
  info.op = 'metadata'
  const sv = knownStore(ctx, store)
  const lease = sv.live.acquire()
  if (!lease) throw noLiveVersion(sv)
  try {
    const m = lease.reader.metadata
    const own = m.layout.find((n) => n.id === ctx.nodeId)
    sendJson(
      res,
      200,
      {
        store: m.store,
        version: m.version,
        nodeId: ctx.nodeId,
        clusterName: m.clusterName,
        replication: m.replication,
        keySerializer: m.keySerializer,
        valueSerializer: m.valueSerializer,
        keyHash: m.keyHash,
        partitions: own?.partitions ?? ctx.cluster.nodes.find((n) => n.id === ctx.nodeId)?.partitions ?? [],
        layout: m.layout,
        chunks: m.chunks,
        records: m.records,
        compression: m.compression,
        formatMajor: m.formatMajor,
        formatMinor: m.formatMinor,
        stale: sv.stale !== undefined,
        ...(sv.stale ? { staleReason: sv.stale.reason } : {}),
      },
      { [VERSION_HEADER]: String(m.version) },
    )
  } finally {
    lease.release()
  }
}

function getKey(ctx: AppContext, store: string, rawKey: string, res: ServerResponse, info: RequestInfo): void {
  info.op = 'get'
  const sv = knownStore(ctx, store)
  if (rawKey.length > 3 * MAX_KEY_BYTES) throw new KeyTooLong()
  const key = percentDecodeBytes(rawKey)
  if (key.length > MAX_KEY_BYTES) throw new KeyTooLong()
  checkServable(sv)
  const lease = sv.live.acquire()
  if (!lease) throw noLiveVersion(sv)
  // Released once the response is done: this request reads one version only.
  res.once('close', lease.release)
  const value = lease.reader.get(key)
  ctx.metrics.keys.inc({ store, result: value === undefined ? 'miss' : 'hit' })
  if (value === undefined) {
    res.writeHead(404, { [VERSION_HEADER]: String(lease.version), 'Content-Length': 0, 'Cache-Control': 'no-store' })
    res.end()
    return
  }
  res.writeHead(200, {
    'Content-Type': 'application/octet-stream',
    'Content-Length': value.length,
    [VERSION_HEADER]: String(lease.version),
  })
  res.end(value)
}

/** A key longer than MAX_KEY_BYTES in a URL: 414 URI Too Long. */
class KeyTooLong extends HttpStatusError {
  constructor() {
    super(414, 'RO_TOO_LARGE', `the key is longer than ${MAX_KEY_BYTES} bytes`)
  }
}

async function multiGet(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> {
  info.op = 'multi_get'
  const sv = knownStore(ctx, store)
  checkServable(sv)
  const body = await readBody(req, MAX_MULTIGET_BODY_BYTES)
  const keys = decodeKeys(body)
  checkServable(sv)
  const lease = sv.live.acquire()
  if (!lease) throw noLiveVersion(sv)
  res.once('close', lease.release)
  let hits = 0
  const count = (vs: readonly (Buffer | undefined)[]): void => {
    for (const v of vs) if (v !== undefined) hits++
  }
  // The first batch is read before the status line, so most failures still get a status.
  // Each batch goes out as one buffer: a write per value costs more than the lookups.
  let values = lease.reader.getMany(keys.slice(0, MULTIGET_BATCH))
  count(values)
  const headers = {
    'Content-Type': 'application/octet-stream',
    [VERSION_HEADER]: String(lease.version),
    'X-Rostore-Keys': String(keys.length),
    'Cache-Control': 'no-store',
  }
  if (keys.length <= MULTIGET_BATCH) {
    const bodyOut = encodeValues(values)
    res.writeHead(200, { ...headers, 'Content-Length': bodyOut.length })
    res.end(bodyOut)
  } else {
    res.writeHead(200, headers)
    for (let at = 0; ;) {
      res.write(encodeValues(values))
      at += values.length
      if (at >= keys.length || res.destroyed) break
      if (res.writableNeedDrain) await drainOrClose(res)
      if (res.destroyed) break
      values = lease.reader.getMany(keys.slice(at, at + MULTIGET_BATCH))
      count(values)
    }
    res.end()
  }
  ctx.metrics.keys.inc({ store, result: 'hit' }, hits)
  ctx.metrics.keys.inc({ store, result: 'miss' }, keys.length - hits)
}

function drainOrClose(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done)
      res.off('close', done)
      resolve()
    }
    res.once('drain', done)
    res.once('close', done)
  })
}

// ---------------------------------------------------------------------------------------
// admin routes

/** A swap result as JSON: `from` is null (not missing) for a store's first swap. */
function swapJson(r: SwapResult): Record<string, unknown> {
  return { ...r, from: r.from ?? null, elapsedMs: round3(r.elapsedMs), flipMs: round3(r.flipMs) }
}

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000
}

async function listVersions(ctx: AppContext, store: string, res: ServerResponse, info: RequestInfo): Promise<void> {
  info.op = 'admin_versions'
  const sv = knownStore(ctx, store)
  sendJson(res, 200, { store, live: sv.liveVersion ?? null, versions: await sv.listVersions() })
}

function boolField(body: Record<string, unknown>, name: string): boolean {
  const v = body[name]
  if (v === undefined) return false
  if (typeof v !== 'boolean') throw badRequest(`${name} must be true or false`)
  return v
}

async function install(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> {
  info.op = 'admin_install'
  const body = await readJsonObject(req)
  onlyFields(body, ['path', 'swap', 'link'])
  const path = body['path']
  if (typeof path !== 'string' || path.length === 0 || path.length > 4096 || path.includes('\0')) {
    throw badRequest('path must be the absolute path of a node directory')
  }
  if (!isAbsolute(path)) throw badRequest('path must be absolute')
  const swapAfter = boolField(body, 'swap')
  const link = boolField(body, 'link')
  const sv = await ctx.dataDir.getOrCreate(store)
  const job = ctx.jobs.start('install', store, async ({ signal, progress }) => {
    const installed = await sv.install(path, { link, signal, onProgress: progress })
    if (!swapAfter) return installed
    return { ...installed, swap: swapJson(await sv.swap(installed.version)) }
  })
  sendJson(res, 202, job, { Location: `/admin/jobs/${job.id}` })
}

async function fetchRoute(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> {
  info.op = 'admin_fetch'
  const body = await readJsonObject(req)
  onlyFields(body, ['source', 'version', 'maxBytesPerSec', 'swap'])
  if (!ctx.fetch) throw new StoreError('RO_CONFLICT', 'fetching is not available on this node')
  const source = body['source']
  if (typeof source !== 'string' || source.length === 0 || source.length > 4096 || source.includes('\0')) {
    throw badRequest('source must be a path or URL of a build output')
  }
  const version = body['version'] === undefined ? undefined : requestVersion(body['version'])
  const rate = body['maxBytesPerSec']
  if (rate !== undefined && (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0)) {
    throw badRequest('maxBytesPerSec must be a positive number')
  }
  const swapAfter = boolField(body, 'swap')
  const sv = await ctx.dataDir.getOrCreate(store)
  if (version !== undefined && sv.versions().includes(version)) {
    throw new StoreError('RO_CONFLICT', `store ${store} already has version ${version}`)
  }
  const runner = ctx.fetch
  const job = ctx.jobs.start('fetch', store, async ({ signal, progress }) => {
    const fetched = await runner({ sv, source, version, maxBytesPerSec: rate as number | undefined, signal, onProgress: progress })
    if (!swapAfter) return fetched
    return { ...fetched, swap: swapJson(await sv.swap(fetched.version)) }
  })
  sendJson(res, 202, job, { Location: `/admin/jobs/${job.id}` })
}

async function swap(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> {
  info.op = 'admin_swap'
  const body = await readJsonObject(req)
  onlyFields(body, ['version'])
  const version = requestVersion(body['version'])
  const result = await knownStore(ctx, store).swap(version)
  sendJson(res, 200, swapJson(result))
}

async function rollback(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> {
  info.op = 'admin_rollback'
  const body = await readJsonObject(req)
  onlyFields(body, ['to'])
  const to = body['to'] === undefined || body['to'] === null ? undefined : requestVersion(body['to'], 'to')
  const result = await knownStore(ctx, store).rollback(to)
  sendJson(res, 200, swapJson(result))
}

async function deleteVersion(ctx: AppContext, store: string, version: number, res: ServerResponse, info: RequestInfo): Promise<void> {
  info.op = 'admin_delete'
  await knownStore(ctx, store).deleteVersion(version)
  sendJson(res, 200, { store, deleted: version })
}

async function stale(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> {
  info.op = 'admin_stale'
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

/** The lease a cluster push holds on the store while it runs (server/push-lock.ts). */
async function pushLock(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> {
  info.op = 'admin_lock'
  checkStoreName(store)
  const body = await readJsonObject(req)
  onlyFields(body, ['owner', 'ttlMs'])
  const owner = body['owner']
  if (typeof owner !== 'string' || !/^[A-Za-z0-9._:-]{1,128}$/.test(owner))
    throw badRequest('owner must be 1-128 characters of [A-Za-z0-9._:-]')
  if (req.method === 'DELETE') {
    ctx.pushLocks.release(store, owner)
    sendJson(res, 200, { store, locked: false })
    return
  }
  const ttl = body['ttlMs']
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1000 || ttl > 7 * 24 * 3600_000)
    throw badRequest('ttlMs must be an integer from 1000 to 604800000')
  sendJson(res, 200, { store, locked: true, ...ctx.pushLocks.acquire(store, owner, ttl) })
}

function listJobs(ctx: AppContext, res: ServerResponse, info: RequestInfo): void {
  info.op = 'admin_jobs'
  sendJson(res, 200, { jobs: ctx.jobs.list() })
}

function getJob(ctx: AppContext, id: string, res: ServerResponse, info: RequestInfo): void {
  info.op = 'admin_job'
  const job = ctx.jobs.get(id)
  if (!job) throw new StoreError('RO_NOT_FOUND', `no job ${id}`)
  sendJson(res, 200, job)
}

function cancelJob(ctx: AppContext, id: string, res: ServerResponse, info: RequestInfo): void {
  info.op = 'admin_cancel'
  sendJson(res, 202, ctx.jobs.cancel(id))
}

async function rescan(ctx: AppContext, res: ServerResponse, info: RequestInfo): Promise<void> {
  info.op = 'admin_rescan'
  const added = await ctx.dataDir.rescan()
  sendJson(res, 200, { added })
}
