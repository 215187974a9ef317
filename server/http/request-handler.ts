import type { IncomingMessage, ServerResponse } from 'node:http'
import { errorMessage } from '../../common/errors'
import { AdminDisabledError, checkAdminOrRead } from '../auth'
import type { ControlTarget, ReadContext } from '../context'
import { badRequest, errorResponse, MAX_URL_BYTES, publicErrorResponse, sendJson } from './http-util'
import { UNKNOWN_STORE } from '../metrics'
import { isConsoleViewPath } from '../routes/console'
import { findRoutes, noRoute } from '../routes/route'
import { ROUTES } from '../routes/table'
import { BUSY_RETRY_AFTER_S } from './request-budget'

/** What the metrics learn about a request as it is routed. */
interface RequestInfo {
  op: string
  store: string
  /** The admin token was checked: errors may name paths and internals. */
  admin: boolean
}

const MAX_PATH_LENGTH = 4096

/**
 * The node's HTTP API (docs/API.md). Plain node:http: the raw path is matched against the
 * route table (routes/table.ts), so percent-escapes are decoded exactly once, to bytes, by
 * us. Every request is counted and timed under its route's op label.
 */
export interface RequestHandler {
  (req: IncomingMessage, res: ServerResponse): void
  /** Shutdown: responses not started yet will say "Connection: close". */
  closeConnectionsAfterResponse(): void
}

/**
 * `ctx` serves the read routes in this process; `control` says where the control routes
 * (admin, status, metrics) run: here, or forwarded to the node's supervisor.
 */
export function createRequestHandler(ctx: ReadContext, control: ControlTarget): RequestHandler {
  const inFlight = new Set<ServerResponse>()
  const known = (store: string): boolean =>
    ctx.stores.get(store) !== undefined || (control.kind === 'local' && control.ctx.dataDir.get(store) !== undefined)
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const started = process.hrtime.bigint()
    const info: RequestInfo = { op: 'unknown', store: '', admin: false }
    if (ctx.shuttingDown()) res.setHeader('Connection', 'close')
    inFlight.add(res)
    res.once('close', () => {
      inFlight.delete(res)
      // The supervisor counts the requests it answers for a worker.
      if (info.op === FORWARDED) return
      const seconds = Number(process.hrtime.bigint() - started) / 1e9
      const store = metricStore(known, info.store)
      const status = res.headersSent ? res.statusCode : 499
      ctx.metrics.requests.inc({ store, op: info.op, status: String(status) })
      ctx.metrics.latency.observe({ store, op: info.op }, seconds)
      if (ctx.accessLog) {
        ctx.log.info('request', { method: req.method, op: info.op, store, status, ms: Math.round(seconds * 1e6) / 1000 })
      }
    })
    let handled: Promise<void> | void
    try {
      handled = dispatch(ctx, control, req, res, info)
    } catch (err) {
      handled = Promise.reject(err)
    }
    Promise.resolve(handled).catch((err: unknown) => fail(ctx, known, req, res, info, err))
  }
  return Object.assign(handler, {
    closeConnectionsAfterResponse: () => {
      for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close')
    },
  })
}

const FORWARDED = 'forwarded'

/** Store label of a request: bounded to the stores this node has. */
function metricStore(known: (store: string) => boolean, store: string): string {
  return store === '' ? '' : known(store) ? store : UNKNOWN_STORE
}

/** Paths of the control routes: admin (any, so even unknown ones are authenticated there), status, metrics, the console's views. */
function isControlPath(segments: readonly string[]): boolean {
  return (
    segments[0] === 'admin' ||
    (segments.length === 1 && (segments[0] === 'status' || segments[0] === 'metrics')) ||
    isConsoleViewPath(segments)
  )
}

function dispatch(
  ctx: ReadContext,
  control: ControlTarget,
  req: IncomingMessage,
  res: ServerResponse,
  info: RequestInfo,
): Promise<void> | void {
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
  const segments = path.slice(1).split('/')
  const method = req.method ?? 'GET'
  if (path.length > MAX_PATH_LENGTH && segments[0] !== 'stores') throw badRequest('path too long')
  if (control.kind === 'forward' && isControlPath(segments)) {
    info.op = FORWARDED
    return control.forward(req, res)
  }
  if (segments[0] === 'admin' && control.kind === 'local') {
    // Authenticate before looking at anything else: an unknown admin path is a 401 too.
    info.op = 'admin'
    if (isStreamPath(segments)) checkAdminOrRead(req, control.ctx.auth, control.ctx.readAuth)
    else control.ctx.auth.check(req)
    info.admin = true
  } else if (segments[0] === 'stores') {
    info.op = 'store'
  }
  const matches = findRoutes(ROUTES, segments)
  const named = matches[0]?.params.store
  if (named !== undefined) info.store = named
  if (matches.length === 0) throw noRoute(method, path)
  const match = matches.find((m) => m.route.methods.includes(method))
  if (!match) {
    info.op = 'method'
    const allowed = [...new Set(matches.flatMap((m) => m.route.methods))]
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
  info.op = match.route.op
  const route = match.route
  // Read routes run in every serving loop (a worker, or the only process), so each checks
  // the read token itself; supervisors only ever see forwarded control routes.
  if (route.access === 'read') ctx.readAuth.check(req)
  if (route.scope === 'read') return route.handle(ctx, req, res, match.params)
  if (control.kind === 'local') {
    if (route.access === 'metrics') control.ctx.metricsAuth?.check(req)
    return route.handle(control.ctx, req, res, match.params)
  }
  throw new RangeError(`control route ${route.path} outside the control paths`)
}

function realmOf(url: string): string {
  if (url.startsWith('/admin')) return 'admin'
  return url === '/metrics' || url.startsWith('/metrics?') ? 'metrics' : 'read'
}

/** `/admin/stores/<s>/dump/...`: the streams a read token may open too (routes/stream-dump.ts). */
export function isStreamPath(segments: readonly string[]): boolean {
  return segments.length === 5 && segments[1] === 'stores' && segments[3] === 'dump'
}

function fail(
  ctx: ReadContext,
  known: (store: string) => boolean,
  req: IncomingMessage,
  res: ServerResponse,
  info: RequestInfo,
  err: unknown,
): void {
  let status: number
  let body: unknown
  if (err instanceof AdminDisabledError) {
    status = 403
    body = { error: { code: 'RO_FORBIDDEN', message: err.message } }
  } else {
    // Admin callers may see paths and internals; everyone else gets codes and short messages.
    const r = info.admin ? errorResponse(err) : publicErrorResponse(err)
    status = r.status
    body = r.body
  }
  const code = (body as { error: { code: string } }).error.code
  const store = metricStore(known, info.store)
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
  if (status === 401) headers['WWW-Authenticate'] = `Bearer realm="rostore-${realmOf(req.url ?? '')}"`
  // The request body may still be arriving (413, early 401): do not keep the connection.
  if (!req.complete) headers['Connection'] = 'close'
  if (code === 'RO_BUSY') headers['Retry-After'] = String(BUSY_RETRY_AFTER_S)
  sendJson(res, status, body, headers)
}
