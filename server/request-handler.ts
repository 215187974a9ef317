import type { IncomingMessage, ServerResponse } from 'node:http'
import { errorMessage } from '../common/errors'
import { AdminDisabledError } from './auth'
import type { AppContext } from './context'
import { badRequest, errorResponse, MAX_URL_BYTES, sendJson } from './http-util'
import { UNKNOWN_STORE } from './metrics'
import { findRoutes, noRoute } from './routes/route'
import { ROUTES } from './routes/table'

/** What the metrics learn about a request as it is routed. */
interface RequestInfo {
  op: string
  store: string
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
      const store = metricStore(ctx, info.store)
      const status = res.headersSent ? res.statusCode : 499
      ctx.metrics.requests.inc({ store, op: info.op, status: String(status) })
      ctx.metrics.latency.observe({ store, op: info.op }, seconds)
      if (ctx.accessLog) {
        ctx.log.info('request', { method: req.method, op: info.op, store, status, ms: Math.round(seconds * 1e6) / 1000 })
      }
    })
    let handled: Promise<void> | void
    try {
      handled = dispatch(ctx, req, res, info)
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

/** Store label of a request: bounded to the stores this node has. */
function metricStore(ctx: AppContext, store: string): string {
  return store === '' ? '' : ctx.stores.get(store) ? store : UNKNOWN_STORE
}

function dispatch(ctx: AppContext, req: IncomingMessage, res: ServerResponse, info: RequestInfo): Promise<void> | void {
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
  if (segments[0] === 'admin') {
    // Authenticate before looking at anything else: an unknown admin path is a 401 too.
    info.op = 'admin'
    ctx.auth.check(req)
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
  if (match.route.access === 'read') ctx.readAuth.check(req)
  return match.route.handle(ctx, req, res, match.params)
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
  const store = metricStore(ctx, info.store)
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
  if (status === 401) headers['WWW-Authenticate'] = `Bearer realm="${req.url?.startsWith('/admin') ? 'rostore-admin' : 'rostore-read'}"`
  // The request body may still be arriving (413, early 401): do not keep the connection.
  if (!req.complete) headers['Connection'] = 'close'
  sendJson(res, status, body, headers)
}
