import type { Socket } from 'node:net'
import type { GrowableBuffer } from '../../common/growable-buffer'
import { directSend, type ReplySend } from '../resp/direct-send'
import { answerRead, type FastAnswer, type LaterAnswer } from './fast-reads'
import { HANDOFF, MAX_FAST_BODY_BYTES, MAX_FAST_HEAD_BYTES, newFastRequest, PARTIAL, parseRequest, type FastRequest } from './fast-request'
import { REQUEST_TIMEOUT, writeBytes } from './fast-response'
import type { ReadContext } from '../context'

const EMPTY = Buffer.alloc(0)

/** The bounds of fast connections: node:http's settings of the same listener. */
export interface FastSettings {
  readonly headersMs: number
  readonly requestMs: number
  readonly keepAliveMs: number
  /** keepAliveMs in whole seconds, as the Keep-Alive header says it. */
  readonly keepAliveS: number
  readonly sendTimeoutMs: number
  /** Answers waiting unsent past which a connection reads no more requests. */
  readonly highWaterBytes: number
  readonly checkIntervalMs: number
}

/** What a connection needs of its listener (fast-host.ts). */
export interface FastConnectionHost {
  readonly ctx: ReadContext
  /** The output shared by the listener's connections, empty between read events. */
  readonly out: GrowableBuffer
  readonly settings: FastSettings
  forget(c: FastConnection): void
  handOff(socket: Socket): void
  renewOutput(): void
  counted(req: FastRequest, status: number, started: bigint): void
  countKeys(store: string, hits: number, misses: number): void
}

/**
 * One HTTP/1.1 connection on the fast read path: the requests of each read event are
 * parsed from its bytes and answered in order into the listener's shared output, which
 * leaves in one send. At the first request it does not take (fast-request.ts, fast-reads.ts)
 * the connection goes to node:http with the bytes from that request on, after every answer
 * before it, and never comes back.
 *
 * Bounds, as node:http's: a head not whole within `headersMs` of its first bytes, or a body
 * not whole within `requestMs`, gets 408 and the end of the connection; a connection idle for
 * `keepAliveMs` is closed; one whose answers wait unsent for `sendTimeoutMs` (the client
 * stopped reading) is cut, and while more than a window of answers waits no request is read.
 * It holds at most one unfinished request (16 KiB of head, 64 KiB of body).
 */
export class FastConnection {
  private readonly req = newFastRequest()
  /** Bytes of requests not answered yet: an unfinished one, or those behind a cold read. */
  private pending: Buffer | undefined
  /** When the unfinished request's first bytes arrived (0: none). */
  private partialSince = 0
  /** A cold read or an ownership load is in flight: the requests after it wait. */
  private busy = false
  private closing = false
  private paused = false
  /** When answers started waiting unsent (0: none wait). */
  private stuckSince = 0
  private lastActive = Date.now()
  private readonly send: ReplySend
  private readonly onData = (chunk: Buffer): void => this.receive(chunk)
  private readonly onDrain = (): void => this.drained()
  private readonly onClose = (): void => this.host.forget(this)
  /** The client sent its FIN (the listener allows half-open sockets, as node:http does). */
  private peerEnded = false
  private readonly onEnd = (): void => {
    this.peerEnded = true
    if (!this.busy) this.endAfterAnswers()
  }
  private readonly onError = (): void => undefined
  /** What answering needs, one object per connection, filled in per request. */
  private readonly answer: FastAnswer

  constructor(
    readonly socket: Socket,
    private readonly host: FastConnectionHost,
  ) {
    this.answer = {
      ctx: host.ctx,
      req: this.req,
      buf: EMPTY,
      end: 0,
      out: host.out,
      keepAliveS: host.settings.keepAliveS,
      destroy: () => socket.destroy(),
      countKeys: (store, hits, misses) => host.countKeys(store, hits, misses),
    }
    socket.setNoDelay(true)
    this.send = directSend(socket) ?? ((bytes) => void socket.write(bytes))
    socket.on('data', this.onData)
    socket.on('drain', this.onDrain)
    // 'close' follows every error; the error itself is the client's business.
    socket.on('error', this.onError)
    socket.on('close', this.onClose)
    socket.on('end', this.onEnd)
  }

  /** The listener's sweep: the timeouts above. */
  check(now: number): void {
    const s = this.host.settings
    if (this.stuckSince > 0 && now - this.stuckSince > s.sendTimeoutMs) {
      this.socket.destroy()
      return
    }
    if (this.busy || this.closing) return
    if (this.partialSince > 0) {
      if (now - this.partialSince > (this.req.headDone ? s.requestMs : s.headersMs)) this.timedOut()
    } else if (this.stuckSince === 0 && now - this.lastActive > s.keepAliveMs) {
      this.socket.destroy()
    }
  }

  /** Shutdown: ends the connection now if it holds no request; otherwise its answer will say close. */
  closeIfIdle(): void {
    if (!this.busy && this.pending === undefined && this.stuckSince === 0 && !this.closing) {
      this.closing = true
      this.socket.end()
    }
  }

  private receive(chunk: Buffer): void {
    this.lastActive = Date.now()
    if (this.closing) return
    const buf = this.pending === undefined ? chunk : Buffer.concat([this.pending, chunk])
    this.pending = undefined
    if (this.busy) {
      this.pending = buf
      // A bounded backlog behind a cold read: the socket's window holds the rest.
      if (buf.length > MAX_FAST_HEAD_BYTES + MAX_FAST_BODY_BYTES) this.pause()
      return
    }
    this.process(buf, 0)
  }

  /** Answers the requests of `buf` from `at`, then sends the answers. */
  private process(buf: Buffer, at: number): void {
    const out = this.host.out
    for (;;) {
      if (at === buf.length) {
        this.partialSince = 0
        break
      }
      const end = parseRequest(buf, at, this.req)
      if (end === PARTIAL) {
        if (this.partialSince === 0) this.partialSince = Date.now()
        this.pending = buf.subarray(at)
        break
      }
      if (end === HANDOFF) return this.handOff(buf.subarray(at))
      if (this.host.ctx.shuttingDown()) this.req.close = true
      const started = process.hrtime.bigint()
      this.answer.buf = buf
      this.answer.end = end
      const answered = answerRead(this.answer)
      if (answered === HANDOFF) return this.handOff(buf.subarray(at))
      if (typeof answered !== 'number') {
        // In order: what was answered goes now, the rest waits for this one.
        this.flush(out)
        this.busy = true
        this.pending = buf.subarray(at)
        const consumed = end - at
        void answered.then((r) => this.resume(r, consumed, started))
        return
      }
      this.host.counted(this.req, answered, started)
      this.partialSince = 0
      at = end
      if (this.req.close) {
        this.closing = true
        break
      }
    }
    this.flush(out)
    if (this.closing) this.socket.end()
  }

  /** After a cold read: its answer is in the output (or it goes to node:http), then the requests behind it. */
  private resume(result: LaterAnswer, consumed: number, started: bigint): void {
    this.busy = false
    const buf = this.pending as Buffer
    this.pending = undefined
    if (this.socket.destroyed) return
    if (result.status === HANDOFF) return this.handOff(buf)
    this.host.counted(this.req, result.status, started)
    writeBytes(this.host.out, result.bytes)
    if (this.req.close) {
      this.closing = true
      this.flush(this.host.out)
      this.socket.end()
      return
    }
    if (this.paused && this.stuckSince === 0) this.resumeReading()
    this.partialSince = 0
    this.process(buf, consumed)
    if (this.peerEnded && !this.busy) this.endAfterAnswers()
  }

  private flush(out: GrowableBuffer): void {
    if (out.pos === 0) return
    const bytes = out.bytes()
    out.pos = 0
    if (this.socket.destroyed) return
    this.send(bytes)
    this.lastActive = Date.now()
    if (this.socket.writableLength === 0) return
    // The socket holds on to the bytes: the listener writes on in a new buffer.
    this.host.renewOutput()
    if (this.stuckSince === 0) this.stuckSince = this.lastActive
    if (this.socket.writableLength > this.host.settings.highWaterBytes) this.pause()
  }

  private drained(): void {
    this.stuckSince = 0
    this.lastActive = Date.now()
    if (this.paused && !this.busy) this.resumeReading()
  }

  private pause(): void {
    this.paused = true
    this.socket.pause()
  }

  private resumeReading(): void {
    this.paused = false
    this.socket.resume()
  }

  /**
   * The client will send nothing more: what it sent whole is answered (and sent), an
   * unfinished request never will be, so our side ends too, as node:http's does.
   */
  private endAfterAnswers(): void {
    if (this.socket.destroyed || this.socket.writableEnded) return
    this.closing = true
    this.pending = undefined
    this.socket.end()
  }

  /** What node:http answers a request that did not arrive in time, then the end. */
  private timedOut(): void {
    this.closing = true
    this.pending = undefined
    this.socket.end(REQUEST_TIMEOUT)
  }

  /** node:http takes the connection, and `rest` as the bytes it reads first. */
  private handOff(rest: Buffer): void {
    this.flush(this.host.out)
    this.socket.off('data', this.onData)
    this.socket.off('drain', this.onDrain)
    this.socket.off('error', this.onError)
    this.socket.off('close', this.onClose)
    this.socket.off('end', this.onEnd)
    this.host.forget(this)
    this.socket.pause()
    if (rest.length > 0) this.socket.unshift(rest)
    this.host.handOff(this.socket)
  }
}
