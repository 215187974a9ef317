import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import { TLSSocket } from 'node:tls'
import type { Logger } from '../log'
import { isStreamPath } from '../http/request-handler'

/**
 * A stream (the dump routes, server/routes/stream-dump.ts) leaves a multi-process node from
 * the supervisor on the client's own connection. The serving worker that accepted the
 * connection parses the request head, then passes the socket over its IPC channel with the
 * head as text; the supervisor replays the head into its control server, which answers on
 * that socket as it would on its unix socket (same routes, same token checks, same
 * timeouts). Relayed through the worker instead, each 64 KiB of a dump would cost the
 * worker's event loop an HTTP client read and a socket write, many times a second at the
 * default rate, and reads would queue behind them. Handed off, the worker is out of the stream.
 *
 * Only plain TCP connections are handed off (a TLS session cannot change process) and only
 * body-less GETs of the stream paths; anything else is proxied. The replayed head says
 * `Connection: close`: the supervisor serves control routes only, so the connection ends
 * with the stream; requests a client pipelined behind it are not answered.
 */

/** The IPC message that carries a handed-off socket, worker to supervisor. */
export interface HandOffMessage {
  readonly rostore: 'handoff'
  /** The request head as received (request line and headers, CRLF-terminated), `Connection: close` set. */
  readonly head: string
}

export function isHandOff(m: unknown): m is HandOffMessage {
  return (
    typeof m === 'object' &&
    m !== null &&
    (m as { rostore?: unknown }).rostore === 'handoff' &&
    typeof (m as { head?: unknown }).head === 'string'
  )
}

/** Largest head the supervisor replays; the worker's parser already bounds it (16 KiB by default). */
export const MAX_HANDOFF_HEAD_BYTES = 64 << 10

const NOT_REPLAYED = new Set(['connection', 'keep-alive', 'proxy-connection'])

/**
 * `/admin/stores/<store>/dump/<kind>` without a body, on a plain TCP socket, in a process
 * with an IPC channel (a worker).
 */
export function canHandOff(req: IncomingMessage, hasChannel = typeof process.send === 'function'): boolean {
  if (req.method !== 'GET' || !hasChannel) return false
  const socket = req.socket
  if (!(socket instanceof Socket) || socket instanceof TLSSocket || socket.destroyed) return false
  const length = req.headers['content-length']
  if (req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')) return false
  const url = req.url ?? ''
  const q = url.indexOf('?')
  const path = q < 0 ? url : url.slice(0, q)
  const segments = path.slice(1).split('/')
  return path.startsWith('/') && segments[0] === 'admin' && isStreamPath(segments)
}

/** The head to replay: the request line and headers as received, with `Connection: close`. */
export function requestHead(req: IncomingMessage): string {
  const lines = [`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1`]
  const raw = req.rawHeaders
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string
    if (!NOT_REPLAYED.has(name.toLowerCase())) lines.push(`${name}: ${raw[i + 1] as string}`)
  }
  lines.push('Connection: close', '', '')
  return lines.join('\r\n')
}

/**
 * Worker side: sends the socket and the head to the supervisor. Node detaches the socket
 * from this process's HTTP server (frees its parser, detaches the response, counts the
 * connection as gone) and closes its copy once the supervisor has the descriptor. The
 * response object here never gets a socket again: it is closed by hand, so the request
 * handler stops counting it as in flight.
 */
export function handOff(req: IncomingMessage, res: ServerResponse, log: Logger): void {
  const message: HandOffMessage = { rostore: 'handoff', head: requestHead(req) }
  const socket = req.socket
  process.send?.(message, socket, { keepOpen: false }, (err: Error | null) => {
    // The descriptor did not reach the supervisor (it is going away); the client's
    // connection is closed with the handle, as when a node stops mid-request.
    if (err) log.warn('stream-handoff-failed', { error: err.message })
  })
  res.emit('close')
}

/**
 * Supervisor side: the control server answers the replayed request on the socket. The head
 * goes back in front of whatever the client sent after it, then the socket is served like
 * a new connection of the control server.
 */
export function acceptHandOff(control: HttpServer, message: HandOffMessage, socket: Socket, log: Logger): void {
  if (Buffer.byteLength(message.head, 'latin1') > MAX_HANDOFF_HEAD_BYTES) {
    log.warn('stream-handoff-refused', { reason: 'request head too large' })
    socket.destroy()
    return
  }
  control.emit('connection', socket)
  socket.unshift(Buffer.from(message.head, 'latin1'))
  socket.resume()
}
