import { connect, type Socket } from 'node:net'
import { connect as connectTls } from 'node:tls'
import type { NodeTls } from '../../cluster/cluster'
import { StoreError, errorMessage } from '../../common/errors'
import { RespErrorReply } from '../../formats/wire/resp'
import { RespPipeline, type ReplyCallback } from '../../formats/wire/resp-pipeline'
import { encodeCommand } from '../../formats/wire/resp-writer'

export interface PeerOptions {
  readonly host: string
  readonly port: number
  /** Sent with AUTH first on every connection. */
  readonly readToken?: string
  /** Connect with TLS, checking the node's certificate with these settings (TLS 1.2 at least). */
  readonly tls?: NodeTls
  /** A connection with commands in flight and no byte from the peer for this long is closed. */
  readonly timeoutMs: number
  readonly connections: number
  /** After a failure, sends fail at once for this long (the next replica is asked instead). */
  readonly retryMs: number
}

/**
 * Pipelined RESP connections to one other node, for forwarded reads. Commands of one
 * event-loop turn leave in one write per connection; replies come back in order. Up to
 * `connections` sockets are opened as load needs them (a new one when every open one has
 * commands in flight). A node that cannot be reached is skipped for `retryMs`, so a dead
 * owner costs one failed connect per interval, not one per key.
 */
export class PeerPool {
  private readonly conns: PeerConnection[] = []
  private downUntil = 0
  private downReason = ''
  private closed = false

  constructor(
    readonly nodeId: number,
    private readonly opts: PeerOptions,
  ) {}

  send(command: Buffer, cb: ReplyCallback): void {
    if (this.downUntil !== 0) {
      if (Date.now() < this.downUntil) {
        cb(new StoreError('RO_UNAVAILABLE', `node ${this.nodeId} unreachable (${this.downReason})`), undefined)
        return
      }
      this.downUntil = 0
    }
    if (this.closed) {
      cb(new StoreError('RO_UNAVAILABLE', 'the node is shutting down'), undefined)
      return
    }
    this.pick().send(command, cb)
  }

  close(): void {
    this.closed = true
    for (const c of [...this.conns]) c.destroy(new StoreError('RO_UNAVAILABLE', 'the node is shutting down'))
  }

  private pick(): PeerConnection {
    let best: PeerConnection | undefined
    for (const c of this.conns) if (!best || c.pending < best.pending) best = c
    if (best && (best.pending === 0 || this.conns.length >= this.opts.connections)) return best
    const c = new PeerConnection(this.opts, (conn, err) => {
      const i = this.conns.indexOf(conn)
      if (i >= 0) this.conns.splice(i, 1)
      if (err && this.opts.retryMs > 0) {
        this.downUntil = Date.now() + this.opts.retryMs
        this.downReason = errorMessage(err)
      }
    })
    this.conns.push(c)
    return c
  }
}

class PeerConnection {
  private readonly socket: Socket
  private readonly pipeline = new RespPipeline()
  private flushScheduled = false
  private failure: Error | undefined

  constructor(
    opts: PeerOptions,
    private readonly onGone: (c: PeerConnection, err: Error | undefined) => void,
  ) {
    this.socket = opts.tls
      ? connectTls({ host: opts.host, port: opts.port, minVersion: 'TLSv1.2', ...tlsOptions(opts.tls) }).setNoDelay(true)
      : connect({ host: opts.host, port: opts.port, noDelay: true })
    if (opts.readToken !== undefined) {
      this.pipeline.send(encodeCommand(['AUTH', opts.readToken]), (err, reply) => {
        if (!err && reply instanceof RespErrorReply)
          this.destroy(new StoreError('RO_UNAVAILABLE', `AUTH refused: ${reply.message.slice(0, 100)}`))
      })
      this.scheduleFlush()
    }
    this.socket.on('data', (chunk: Buffer) => {
      const err = this.pipeline.onData(chunk)
      if (err) this.destroy(err)
    })
    this.socket.on('error', (err) => this.destroy(err))
    this.socket.on('close', () => {
      // Closed by the node with commands in flight counts as a failure (the node is skipped
      // for a while); closed while idle does not.
      if (!this.failure && this.pipeline.pending > 0) this.failure = new StoreError('RO_UNAVAILABLE', 'connection closed by the node')
      this.pipeline.fail(this.failure ?? new StoreError('RO_UNAVAILABLE', 'connection closed'))
      this.onGone(this, this.failure)
    })
    this.socket.setTimeout(opts.timeoutMs, () => {
      // Commands in flight and silence: the node hangs. Otherwise the connection is idle.
      if (this.pipeline.pending > 0) {
        this.destroy(new StoreError('RO_UNAVAILABLE', `no answer within ${opts.timeoutMs} ms`))
      } else {
        // Out of the pool first, so no command is sent on a connection that is ending.
        this.onGone(this, undefined)
        this.socket.end()
      }
    })
  }

  get pending(): number {
    return this.pipeline.pending
  }

  send(command: Buffer, cb: ReplyCallback): void {
    this.pipeline.send(command, cb)
    this.scheduleFlush()
  }

  destroy(err: Error): void {
    this.failure ??= err
    this.pipeline.fail(err)
    this.socket.destroy()
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    process.nextTick(() => {
      this.flushScheduled = false
      if (this.socket.destroyed) return
      this.pipeline.flush((bytes) => {
        this.socket.write(bytes)
        return this.socket.writableLength > 0
      })
    })
  }
}

/** CA and server name of a TLS connection to a node (node:tls checks the certificate against the host by default). */
function tlsOptions(tls: NodeTls): { ca?: string | Buffer; servername?: string } {
  return { ...(tls.ca === undefined ? {} : { ca: tls.ca }), ...(tls.servername === undefined ? {} : { servername: tls.servername }) }
}
