import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { GrowableBuffer } from '../../common/growable-buffer'
import type { ReadContext } from '../context'
import { FastConnection, type FastConnectionHost, type FastSettings } from './fast-connection'
import { HEAD, POST, type FastRequest } from './fast-request'
import { DEFAULT_READ_LIMITS } from './read-limits'

/**
 * The fast read path of one node:http listener (HTTP/1.1 without TLS): it takes the
 * listener's new connections in place of node:http, and gives node:http each connection it
 * hands off, as though just accepted. Counts its requests in the same metrics, and logs them
 * in the same access log, as request-handler.ts.
 */
export class FastHost implements FastConnectionHost {
  /** The output every connection answers into during its read event (then sends, and leaves it empty). */
  readonly out = new GrowableBuffer(64 << 10)
  readonly settings: FastSettings
  private readonly conns = new Set<FastConnection>()
  private readonly sweep: NodeJS.Timeout
  private readonly answered: { inc(): void }
  private readonly handedOff: { inc(): void }

  constructor(
    readonly ctx: ReadContext,
    private readonly server: Server,
    private readonly httpConnection: (socket: Socket) => void,
    t: Omit<FastSettings, 'keepAliveS' | 'sendTimeoutMs' | 'highWaterBytes'>,
  ) {
    const limits = ctx.readLimits ?? DEFAULT_READ_LIMITS
    this.settings = {
      ...t,
      keepAliveS: Math.floor(t.keepAliveMs / 1000),
      sendTimeoutMs: limits.sendTimeoutMs,
      highWaterBytes: limits.windowBytes,
    }
    this.answered = ctx.metrics.fastReads.labels('answered')
    this.handedOff = ctx.metrics.fastReads.labels('handed_off')
    this.sweep = setInterval(() => {
      const now = Date.now()
      for (const c of this.conns) c.check(now)
    }, t.checkIntervalMs)
    this.sweep.unref()
    server.once('close', () => clearInterval(this.sweep))
  }

  /** A connection the listener accepted. */
  accept(socket: Socket): void {
    // A draining worker resets new connections before this listener sees them.
    if (socket.destroyed) return
    this.conns.add(new FastConnection(socket, this))
  }

  forget(c: FastConnection): void {
    this.conns.delete(c)
  }

  /** node:http reads the socket from here on (its own timeouts, limits and errors). */
  handOff(socket: Socket): void {
    this.handedOff.inc()
    this.httpConnection.call(this.server, socket)
    socket.resume()
  }

  /** The socket kept the output's bytes to send later: answers go on in a new buffer. */
  renewOutput(): void {
    this.out.buf = Buffer.allocUnsafeSlow(64 << 10)
    this.out.pos = 0
  }

  /** Counts (and with --access-log logs) one answered request, as request-handler.ts does. */
  counted(req: FastRequest, status: number, started: bigint): void {
    const ctx = this.ctx
    this.answered.inc()
    const seconds = Number(process.hrtime.bigint() - started) / 1e9
    const op = req.method === POST ? 'multi_get' : 'get'
    ctx.metrics.requests.inc({ store: req.store, op, status: status === 200 ? '200' : String(status) })
    ctx.metrics.latency.observe({ store: req.store, op }, seconds)
    if (ctx.accessLog) {
      const method = req.method === POST ? 'POST' : req.method === HEAD ? 'HEAD' : 'GET'
      ctx.log.info('request', { method, op, store: req.store, status, ms: Math.round(seconds * 1e6) / 1000 })
    }
  }

  /** Shutdown: idle connections end now, the others after their answers (which say close). */
  closeIdle(): void {
    for (const c of this.conns) c.closeIfIdle()
  }

  /** Shutdown past its drain time. */
  destroyAll(): void {
    for (const c of this.conns) c.socket.destroy()
  }
}

const hosts = new WeakMap<Server, FastHost>()

/**
 * Puts the fast read path in front of `server`'s node:http connection handling. Each
 * accepted connection starts on the fast path; see FastConnection for when it leaves it.
 */
export function installFastReads(server: Server, ctx: ReadContext, t: ConstructorParameters<typeof FastHost>[3]): FastHost {
  const [httpConnection] = server.listeners('connection') as ((socket: Socket) => void)[]
  if (httpConnection === undefined) throw new RangeError('the server has no connection listener to stand in front of')
  server.off('connection', httpConnection)
  const host = new FastHost(ctx, server, httpConnection, t)
  server.on('connection', (socket: Socket) => host.accept(socket))
  hosts.set(server, host)
  return host
}

/** The fast path of a listener, if it has one (drainHttpServer closes its connections too). */
export function fastHostOf(server: object): FastHost | undefined {
  return hosts.get(server as Server)
}
