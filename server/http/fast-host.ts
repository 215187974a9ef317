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
  /**
   * The metric series of each store, op and status, looked up once: a labelled inc() hashes
   * its labels on every call. Bounded: only stores this node serves are answered here.
   */
  private readonly series = new Map<string, RequestSeries>()

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
    const s = this.seriesOf(req.store, op, status)
    s.requests.inc()
    s.latency.observe(seconds)
    if (ctx.accessLog) {
      const method = req.method === POST ? 'POST' : req.method === HEAD ? 'HEAD' : 'GET'
      ctx.log.info('request', { method, op, store: req.store, status, ms: Math.round(seconds * 1e6) / 1000 })
    }
  }

  /** Counts keys read (rostore_keys_read_total), as routes/reads.ts does. */
  countKeys(store: string, hits: number, misses: number): void {
    const s = this.seriesOf(store, 'get', 200)
    if (hits > 0) s.hits.inc(hits)
    if (misses > 0) s.misses.inc(misses)
  }

  private seriesOf(store: string, op: string, status: number): RequestSeries {
    const id = `${store}\0${op}\0${status}`
    let s = this.series.get(id)
    if (!s) {
      const m = this.ctx.metrics
      s = {
        requests: m.requests.labels({ store, op, status: String(status) }),
        latency: m.latency.labels({ store, op }),
        hits: m.keys.labels({ store, result: 'hit' }),
        misses: m.keys.labels({ store, result: 'miss' }),
      }
      this.series.set(id, s)
    }
    return s
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

interface RequestSeries {
  readonly requests: { inc(): void }
  readonly latency: { observe(v: number): void }
  readonly hits: { inc(n: number): void }
  readonly misses: { inc(n: number): void }
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
