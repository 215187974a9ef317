import { randomBytes } from 'node:crypto'
import { createServer, type Server, type Socket } from 'node:net'
import { createServer as createTlsServer, Server as TlsServer } from 'node:tls'
import type { AddressInfo } from 'node:net'
import { errorMessage, StoreError, isStoreError } from '../../common/errors'
import { RespWriter } from '../../formats/wire/resp-writer'
import { argBytes, CommandTable, quoteArg, wrongArity, type RespService } from './command-table'
import { COMMANDS, WRITE_COMMANDS } from './commands'
import { closeListener, type DrainOptions } from '../http/http-listener'
import { RespConnection } from './connection'
import type { ConnectionHost } from './connection-host'
import { Forwarder } from './forwarder'
import { KeyReads } from './key-reads'
import { KeySpace } from './key-space'
import { normalizeRespOptions, type NormalizedRespOptions, type RespContext, type RespServer, type RespServerOptions } from './resp-context'
import { registerRespMetrics, RespStats } from './resp-stats'
import { publicRespErrorOf } from './public-error'
import { READ_BUFFER_BYTES, withReadBuffer } from './read-buffer-socket'
import { StoreRoutes } from './store-routes'
import type { NodeTlsOptions } from '../tls'

const MAX_CLIENTS_REPLY = Buffer.from('-ERR max number of clients reached\r\n', 'latin1')

/**
 * Starts the RESP (Redis protocol) listener of a node: reads only, every Redis client
 * works (docs/API.md "RESP"). Self-contained: it takes what `ctx` gives (stores, cluster,
 * auth, logger, registry) and owns its connections, routes and forwards.
 */
export async function startRespServer(ctx: RespContext, options: RespServerOptions): Promise<RespServer> {
  const opts = normalizeRespOptions(options)
  const routes = new StoreRoutes(ctx.nodeId, ctx.log)
  await routes.preload(ctx.stores.all().flatMap((s) => (s.live.metadata ? [s.live.metadata.keyHash] : [])))
  const listener = new Listener(ctx, opts, routes)
  await listener.listen()
  return listener
}

class Listener implements RespServer, RespService, ConnectionHost<RespConnection> {
  readonly writer = new RespWriter(64 << 10)
  /** Where every plain-TCP connection's reads land, one at a time (read-buffer-socket.ts). */
  private readonly readBuffer = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES)
  readonly table = new CommandTable(COMMANDS)
  /** calls[] index of unknown and refused commands. */
  private readonly otherIndex = COMMANDS.length
  readonly stats: RespStats
  readonly keys: KeySpace
  readonly reads: KeyReads
  readonly startedAt = Date.now()
  readonly runId = randomBytes(20).toString('hex')
  readonly connections = new Set<RespConnection>()
  private readonly forwarder: Forwarder
  private readonly server: Server
  private nextId = 1
  private bound = { host: '', port: 0 }
  private closing: Promise<boolean> | undefined
  private allClosed: (() => void) | undefined
  private idleSweep: NodeJS.Timeout | undefined

  constructor(
    readonly ctx: RespContext,
    readonly opts: NormalizedRespOptions,
    routes: StoreRoutes,
  ) {
    this.stats = new RespStats(COMMANDS.length + 1, ctx.requestBudget)
    this.keys = new KeySpace(ctx.stores, opts.defaultStore)
    this.forwarder = new Forwarder({
      cluster: ctx.cluster,
      nodeId: ctx.nodeId,
      readToken: ctx.readToken,
      peerTls: opts.peerTls,
      timeoutMs: opts.forwardTimeoutMs,
      connections: opts.peerConnections,
      retryMs: opts.peerRetryMs,
      stats: this.stats,
    })
    this.reads = new KeyReads({
      nodeId: ctx.nodeId,
      keys: this.keys,
      routes,
      forwarder: this.forwarder,
      stats: this.stats,
      log: ctx.log,
      maxReplyBytes: opts.maxReplyBytes,
    })
    if (ctx.registry) registerRespMetrics(ctx.registry, this.stats, [...COMMANDS.map((c) => c.name), 'other'])
    const tls = opts.tls
    this.server = tls
      ? createTlsServer(
          // The handshake is bounded like a silent connection: a client that never finishes one is cut.
          { cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2', handshakeTimeout: 10_000, noDelay: true },
          (socket) => this.accept(socket),
        )
      : createServer({ noDelay: true, pauseOnConnect: true }, (socket) => this.accept(socket))
    // A failed handshake (a plain-text client on a TLS port) closes that socket only.
    if (tls) this.server.on('tlsClientError', () => this.stats.protocolErrors++)
  }

  get host(): string {
    return this.bound.host
  }

  get port(): number {
    return this.bound.port
  }

  get tls(): boolean {
    return this.server instanceof TlsServer
  }

  setSecureContext(tls: NodeTlsOptions): void {
    if (!(this.server instanceof TlsServer)) throw new StoreError('RO_BAD_OPTION', 'the RESP listener does not serve TLS')
    this.server.setSecureContext({ cert: tls.cert, key: tls.key })
  }

  address(): { host: string; port: number } {
    return this.bound
  }

  listen(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void =>
        reject(new StoreError('RO_IO', `cannot listen for RESP on ${this.opts.host}:${this.opts.port}: ${err.message}`, { cause: err }))
      this.server.once('error', onError)
      this.server.listen({ host: this.opts.host, port: this.opts.port }, () => {
        this.server.off('error', onError)
        this.server.on('error', (err) => this.ctx.log.error('resp-server-error', { error: err.message }))
        const a = this.server.address() as AddressInfo
        this.bound = { host: a.address, port: a.port }
        resolve()
      })
    })
  }

  private accept(socket: Socket): void {
    if (this.closing) {
      // Shutdown: a connection that still arrives is reset, not served.
      socket.destroy()
      return
    }
    if (this.connections.size >= this.opts.maxClients) {
      this.stats.rejectedConnections++
      socket.on('error', () => undefined)
      // Read (and drop) what it sends, so its end of the connection is seen and it closes.
      socket.resume()
      socket.end(MAX_CLIENTS_REPLY)
      return
    }
    this.stats.connectionsTotal++
    this.stats.connected++
    // Reads start on a later turn of the event loop, by when the connection exists.
    const to: { conn?: RespConnection } = {}
    const fast = this.tls || this.opts.streamReads ? undefined : withReadBuffer(socket, this.readBuffer, (bytes) => to.conn?.receive(bytes))
    if (!fast) socket.resume()
    const conn = new RespConnection(this.nextId++, fast ?? socket, this, this.ctx.readAuth.enabled, fast !== undefined)
    to.conn = conn
    this.connections.add(conn)
    this.idleSweep ??= this.startIdleSweep()
  }

  /** Closes idle connections, checked every quarter of the idle timeout (at most every second). */
  private startIdleSweep(): NodeJS.Timeout | undefined {
    const idleMs = this.opts.idleTimeoutMs
    if (idleMs <= 0) return undefined
    const timer = setInterval(
      () => {
        const now = Date.now()
        for (const c of this.connections) c.closeIfIdle(now, idleMs)
      },
      Math.min(1000, Math.max(10, Math.floor(idleMs / 4))),
    )
    timer.unref()
    return timer
  }

  closed(conn: RespConnection): void {
    if (!this.connections.delete(conn)) return
    this.stats.connected--
    if (this.connections.size === 0) this.allClosed?.()
  }

  dispatch(conn: RespConnection): void {
    const p = conn.parser
    this.stats.commands++
    const i = this.table.find(p.args, p.starts[0] as number, p.ends[0] as number)
    if (i < 0) {
      this.stats.calls[this.otherIndex] = (this.stats.calls[this.otherIndex] ?? 0) + 1
      this.refuse(conn)
      return
    }
    this.stats.calls[i] = (this.stats.calls[i] ?? 0) + 1
    const cmd = this.table.list[i]!
    if (cmd.arity > 0 ? p.argc !== cmd.arity : p.argc < -cmd.arity) {
      conn.out().error(wrongArity(cmd.name))
      return
    }
    if (!conn.authed && !cmd.noAuth) {
      conn.out().error('NOAUTH Authentication required.')
      return
    }
    conn.lastCommand = cmd.name
    try {
      cmd.run(this, conn)
    } catch (err) {
      // Handlers read before they write, so a failure leaves no partial reply behind.
      const code = isStoreError(err) ? err.code : 'RO_INTERNAL'
      this.ctx.log.error('resp-command-failed', { command: cmd.name, code, error: errorMessage(err) })
      conn.out().error(publicRespErrorOf(err))
    }
  }

  private refuse(conn: RespConnection): void {
    const name = argBytes(conn, 0)
    const lc = name.length <= 32 ? name.toString('latin1').toLowerCase() : ''
    if (!conn.authed) {
      conn.out().error('NOAUTH Authentication required.')
      return
    }
    if (WRITE_COMMANDS.has(lc)) {
      conn.out().error("READONLY You can't write against a read only store.")
      return
    }
    let args = ''
    for (let i = 1; i < conn.parser.argc && i <= 3; i++) args += `'${quoteArg(argBytes(conn, i), 32)}' `
    conn.out().error(`ERR unknown command '${quoteArg(name, 32)}', with args beginning with: ${args}`)
  }

  /**
   * Stops taking connections (refused; with a `shared` listener, reset as they arrive, see
   * DrainOptions), answers what the connections already sent, and closes them.
   */
  close(drainMs = 5_000, opts: DrainOptions = {}): Promise<boolean> {
    this.closing ??= (async () => {
      const stopped = opts.shared ? undefined : this.closeListener()
      const drained = new Promise<void>((resolve) => {
        this.allClosed = resolve
        if (this.connections.size === 0) resolve()
      })
      // Idle connections close now; busy ones once their queued replies are out.
      for (const c of this.connections) c.drain()
      let timer: NodeJS.Timeout | undefined
      const inTime = await Promise.race([
        drained.then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), drainMs)
        }),
      ])
      clearTimeout(timer)
      for (const c of this.connections) c.destroy()
      clearInterval(this.idleSweep)
      this.forwarder.close()
      await stopped
      return inTime
    })()
    return this.closing
  }

  /** Closes the listener; a `shared` one is closed by its caller after close() (see DrainOptions). */
  closeListener(): Promise<void> {
    return closeListener(this.server)
  }
}
