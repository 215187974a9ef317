import { connect, type Socket } from 'node:net'
import { connect as connectTls } from 'node:tls'
import type { NodeTls } from '../cluster/cluster'
import { errorMessage } from '../common/errors'
import { RespErrorReply, type RespValue } from '../formats/wire/resp'
import { RespPipeline } from '../formats/wire/resp-pipeline'
import { encodeCommand } from '../formats/wire/resp-writer'
import { NodeUnreachableError, tlsRequestOptions } from './http'

export interface RespConnectionOptions {
  readonly host: string
  readonly port: number
  /** Sent with AUTH when the connection opens (the node's read token). */
  readonly password?: string
  /** Speak TLS (a node that serves HTTPS serves RESP over TLS), checking its certificate with these. */
  readonly tls?: NodeTls
  /** A command in flight with no byte from the node for this long fails the connection. Default 2000 ms. */
  readonly timeoutMs?: number
}

/**
 * One pipelined RESP connection to a node, opened on first use and again after a
 * failure: commands are written as they come (those of one event-loop turn in one write)
 * and resolve with their replies in order. Error replies resolve too (as RespErrorReply);
 * connection failures and timeouts reject with NodeUnreachableError (RO_UNAVAILABLE), so
 * the routing client fails over.
 */
export class RespClientConnection {
  private socket: Socket | undefined
  private pipeline: RespPipeline | undefined
  private flushScheduled = false
  readonly endpoint: string

  constructor(private readonly o: RespConnectionOptions) {
    this.endpoint = `${o.host}:${o.port}`
  }

  /** Sends one command; resolves with its reply. */
  command(args: readonly (Uint8Array | string)[]): Promise<RespValue> {
    return this.send(encodeCommand(args))
  }

  /** Sends an encoded command. */
  send(bytes: Buffer): Promise<RespValue> {
    const pipeline = this.open()
    return new Promise((resolve, reject) => {
      pipeline.send(bytes, (err, reply) => (err ? reject(err) : resolve(reply as RespValue)))
      this.scheduleFlush()
    })
  }

  close(): void {
    const s = this.socket
    this.socket = undefined
    this.pipeline?.fail(new NodeUnreachableError(this.endpoint, 'connection closed by the client'))
    this.pipeline = undefined
    s?.destroy()
  }

  private open(): RespPipeline {
    if (this.pipeline && this.socket && !this.socket.destroyed) return this.pipeline
    const pipeline = new RespPipeline()
    const socket = this.o.tls
      ? connectTls({ host: this.o.host, port: this.o.port, minVersion: 'TLSv1.2', ...tlsRequestOptions(this.o.tls) }).setNoDelay(true)
      : connect({ host: this.o.host, port: this.o.port, noDelay: true })
    this.socket = socket
    this.pipeline = pipeline
    const fail = (err: Error): void => {
      pipeline.fail(err)
      socket.destroy()
      if (this.pipeline === pipeline) {
        this.pipeline = undefined
        this.socket = undefined
      }
    }
    if (this.o.password !== undefined) {
      pipeline.send(encodeCommand(['AUTH', this.o.password]), (err, reply) => {
        if (!err && reply instanceof RespErrorReply)
          fail(new NodeUnreachableError(this.endpoint, `AUTH refused: ${reply.message.slice(0, 200)}`))
      })
      this.scheduleFlush()
    }
    socket.on('data', (chunk: Buffer) => {
      const err = pipeline.onData(chunk)
      if (err) fail(new NodeUnreachableError(this.endpoint, errorMessage(err), { cause: err }))
    })
    socket.on('error', (err) => fail(new NodeUnreachableError(this.endpoint, err.message, { cause: err })))
    socket.on('close', () => fail(new NodeUnreachableError(this.endpoint, 'connection closed')))
    const timeoutMs = this.o.timeoutMs ?? 2000
    socket.setTimeout(timeoutMs, () => {
      if (pipeline.pending > 0) fail(new NodeUnreachableError(this.endpoint, `no answer within ${timeoutMs} ms`))
    })
    return pipeline
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    process.nextTick(() => {
      this.flushScheduled = false
      const socket = this.socket
      if (!socket || socket.destroyed) return
      this.pipeline?.flush((bytes) => {
        socket.write(bytes)
        return socket.writableLength > 0
      })
    })
  }
}
