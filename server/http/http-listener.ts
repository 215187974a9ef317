import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { errorMessage, StoreError } from '../../common/errors'
import { MAX_URL_BYTES } from './http-util'
import type { NodeTimeouts } from '../node-options'
import type { RequestHandler } from './request-handler'
import { createNodeServer, type NodeServer, type NodeTlsOptions } from '../tls'
import type { DrainOptions } from './drain-options'
import type { ReadContext } from '../context'
import { fastHostOf, installFastReads } from './fast-host'

/**
 * The node's HTTP (or, with `tls`, HTTPS) server with its bounds: header size, slow-loris,
 * handshake and idle timeouts, and connections at once.
 */
export function createHttpServer(
  handler: RequestHandler,
  t: NodeTimeouts = {},
  tls?: NodeTlsOptions,
  bounds: { maxConnections?: number; onDrop?: () => void } = {},
  /** Serve key reads on the fast path (fast-host.ts) from this context; plain HTTP only. */
  fastReads?: ReadContext,
): NodeServer {
  const server = createNodeServer(
    {
      maxHeaderSize: MAX_URL_BYTES + (64 << 10),
      headersTimeout: t.headersMs ?? 10_000,
      requestTimeout: t.requestMs ?? 30_000,
      keepAliveTimeout: t.keepAliveMs ?? 5_000,
      connectionsCheckingInterval: t.checkIntervalMs ?? 1_000,
    },
    tls,
    t.headersMs ?? 10_000,
  )
  server.headersTimeout = t.headersMs ?? 10_000
  server.requestTimeout = t.requestMs ?? 30_000
  server.keepAliveTimeout = t.keepAliveMs ?? 5_000
  // Each connection may hold a read window and a value (read-limits.ts): this bounds them.
  if (bounds.maxConnections !== undefined) server.maxConnections = bounds.maxConnections
  if (bounds.onDrop) server.on('drop', bounds.onDrop)
  answerClientErrors(server)
  server.on('request', handler)
  if (fastReads && tls === undefined) {
    installFastReads(server as HttpServer, fastReads, {
      headersMs: t.headersMs ?? 10_000,
      requestMs: t.requestMs ?? 30_000,
      keepAliveMs: t.keepAliveMs ?? 5_000,
      checkIntervalMs: t.checkIntervalMs ?? 1_000,
    })
  }
  return server
}

/**
 * Answers what the parser refuses (malformed requests, oversized headers, timeouts), in
 * order: an error after pipelined requests waits for their responses, which it would
 * otherwise cut or precede. A request still receiving its body when the error comes is
 * the one in error and waits for nothing. Data after a `Connection: close` request is no
 * request (RFC 9112 9.6): it gets no answer, the connection just ends after the response,
 * so a client retries what it pipelined.
 */
function answerClientErrors(server: NodeServer): void {
  /** Requests of each connection whose responses are not finished. */
  const open = new WeakMap<Socket, Set<IncomingMessage>>()
  const deferred = new WeakMap<Socket, () => void>()
  const waitedFor = (socket: Socket): number => [...(open.get(socket) ?? [])].filter((r) => r.complete).length
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket
    let reqs = open.get(socket)
    if (!reqs) open.set(socket, (reqs = new Set()))
    reqs.add(req)
    res.once('close', () => {
      reqs.delete(req)
      const answer = deferred.get(socket)
      if (!answer || waitedFor(socket) > 0) return
      deferred.delete(socket)
      answer()
    })
  })
  const answered = new WeakSet<Socket>()
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // The parser stays broken and reports again as more bytes arrive: answer once.
    if (answered.has(socket)) return
    answered.add(socket)
    const answer = (): void => {
      if (!socket.writable || (err.code === 'ECONNRESET' && !socket.readable)) {
        socket.destroy()
        return
      }
      if (err.code === 'HPE_CLOSED_CONNECTION') {
        socket.end()
        return
      }
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
      const text = status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
    }
    if (waitedFor(socket) > 0) deferred.set(socket, answer)
    else answer()
  })
}

/** Listen on host:port (or a unix socket path); RO_IO naming the address when it cannot. */
export async function listen(server: NodeServer, where: { host: string; port: number } | { path: string }): Promise<AddressInfo | string> {
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err)
    server.once('error', onError)
    server.listen(where, () => {
      server.off('error', onError)
      resolve()
    })
  }).catch((err: unknown) => {
    const at = 'path' in where ? 'the control socket' : `${where.host}:${where.port}`
    throw new StoreError('RO_IO', `cannot listen on ${at}: ${errorMessage(err)}`, { cause: err })
  })
  return server.address() as AddressInfo | string
}

export type { DrainOptions } from './drain-options'

/** http(s)://host:port, IPv6 hosts in brackets. */
export function urlOf(host: string, port: number, tls: boolean): string {
  return `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`
}

/**
 * Stop accepting, let in-flight requests finish (their responses say "Connection: close")
 * and close idle connections as they become idle; after `timeoutMs` cut what is left.
 * Resolves true when everything drained in time.
 */
export async function drainHttpServer(
  server: NodeServer,
  handler: RequestHandler,
  timeoutMs: number,
  opts: DrainOptions = {},
): Promise<boolean> {
  handler.closeConnectionsAfterResponse()
  let drained: Promise<void>
  if (opts.shared) {
    // Before the server's own listener: a new connection is reset, never parsed.
    server.prependListener('connection', (socket: Socket) => socket.destroy())
    drained = untilNoConnections(server)
  } else {
    drained = new Promise<void>((resolve) => server.close(() => resolve()))
  }
  const fast = fastHostOf(server)
  const closeIdle = (): void => {
    server.closeIdleConnections()
    fast?.closeIdle()
  }
  closeIdle()
  const sweep = setInterval(closeIdle, 50)
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs)
  })
  const inTime = await Promise.race([drained.then(() => true), timedOut])
  clearInterval(sweep)
  clearTimeout(timer)
  if (!inTime) {
    server.closeAllConnections()
    fast?.destroyAll()
  }
  return inTime
}

/** Resolves once the listener is closed (see DrainOptions.shared for when). */
export function closeListener(server: { close(done: () => void): unknown }): Promise<void> {
  return new Promise<void>((resolve) => server.close(() => resolve()))
}

/** Resolves once the server holds no connection (checked as they close, and every 50 ms). */
function untilNoConnections(server: NodeServer): Promise<void> {
  return new Promise<void>((resolve) => {
    const check = (): void => {
      server.getConnections((err, count) => {
        if (err || count > 0) return
        clearInterval(poll)
        resolve()
      })
    }
    const poll = setInterval(check, 50)
    check()
  })
}
