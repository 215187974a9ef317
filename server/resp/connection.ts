import type { Socket } from 'node:net'
import { errorMessage } from '../../common/errors'
import { unauthenticatedLimits, type RespProto, type RespRequestLimits } from '../../formats/wire/resp'
import { RespRequestParser } from '../../formats/wire/resp-request'
import { RespWriter } from '../../formats/wire/resp-writer'
import { directSend, type ReplySend } from './direct-send'
import { BUDGET_FREE_BYTES } from '../http/request-budget'
import { BUSY_REPLY, cutAfterLastReply, MAX_DEFERRED, TURN_ARGS, type ConnectionHost, type Deferred } from './connection-host'

/**
 * One client connection: reads bytes, runs every complete command they hold, and sends
 * the replies of one read event with one socket write. Replies leave in command order:
 * while a forwarded read is in flight, later replies queue behind it (`Deferred`).
 *
 * Back pressure: when more than `outputHighWaterBytes` of replies wait (the client reads
 * slowly, or a forwarded read holds up the queue), the connection stops reading commands;
 * the socket's receive window then stops the client. A client that does not read its
 * replies for `sendTimeoutMs` is disconnected, so it holds a bounded amount of memory
 * and never stalls anyone else (nothing here blocks). An idle connection is closed after
 * `idleTimeoutMs` (give or take a quarter of it: closeIfIdle). A protocol error is answered, then the connection is closed.
 */
export class RespConnection {
  proto: RespProto = 2
  name = ''
  libName = ''
  libVer = ''
  readonly createdAt = Date.now()
  lastActiveAt = this.createdAt
  lastCommand = 'NULL'
  readonly parser: RespRequestParser
  readonly remote: string
  readonly local: string
  /** No more commands are run; the socket ends once the queued replies are out (QUIT, protocol error). */
  closing = false
  /** Shutdown: no more bytes are read; the commands already received run, then the socket ends. */
  private draining = false
  /** The last run() found no complete command left in the parser. */
  private parserEmpty = true
  private readonly queue: Deferred[] = []
  private running = false
  private paused = false
  private flushScheduled = false
  private sendTimer: NodeJS.Timeout | undefined
  /** Arguments of the commands run since the connection last yielded (TURN_ARGS). */
  private spent = 0
  /** Over its turn's share: runs no command and reads nothing until `nextTurn`. */
  private yielded = false
  /** Bytes the parser holds, as charged to the request budget. */
  private charged = 0
  /** Sends the shared writer's replies: past the stream machinery when it can (direct-send.ts). */
  private readonly send: ReplySend
  private readonly fullLimits: RespRequestLimits
  private readonly unauthLimits: RespRequestLimits
  private isAuthed = false

  /**
   * Whether the connection may run commands that need the read token. Until it may, its
   * requests are held to UNAUTHENTICATED_REQUEST_LIMITS: a command larger than AUTH needs
   * is a protocol error before it is buffered.
   */
  get authed(): boolean {
    return this.isAuthed
  }

  set authed(v: boolean) {
    this.isAuthed = v
    this.parser.setLimits(v ? this.fullLimits : this.unauthLimits)
  }

  constructor(
    readonly id: number,
    readonly socket: Socket,
    private readonly host: ConnectionHost<RespConnection>,
    authRequired: boolean,
    /**
     * The socket reads into a buffer it reuses and hands each read to receive()
     * (read-buffer-socket.ts); it sends its replies past the stream machinery too.
     */
    borrowedReads = false,
  ) {
    this.parser = new RespRequestParser(host.opts.requestLimits)
    this.fullLimits = this.parser.currentLimits
    this.unauthLimits = unauthenticatedLimits(this.fullLimits)
    this.authed = !authRequired
    this.remote = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}`
    this.local = `${socket.localAddress ?? '?'}:${socket.localPort ?? 0}`
    socket.setNoDelay(true)
    this.send = (borrowedReads ? directSend(socket) : undefined) ?? ((bytes) => void socket.write(bytes))
    if (!borrowedReads)
      socket.on('data', (chunk: Buffer) => {
        this.onData(chunk)
        this.account()
      })
    socket.on('drain', () => this.onDrain())
    // 'close' follows every error; the error itself is the client's business.
    socket.on('error', () => undefined)
    socket.on('close', () => this.onClose())
  }

  /**
   * The listener's idle sweep: closes the connection when it sent nothing for `idleMs` and
   * has no reply waiting or leaving. A sweep rather than socket.setTimeout, which re-arms a
   * timer on every read and write, which costs a GET load measurably.
   */
  closeIfIdle(now: number, idleMs: number): void {
    if (now - this.lastActiveAt < idleMs || this.queue.length > 0 || this.paused || this.socket.writableLength > 0) return
    this.host.stats.idleTimeouts++
    this.socket.destroy()
  }

  /** Where the next reply goes: the shared writer, or the queue behind a deferred reply. */
  out(): RespWriter {
    const n = this.queue.length
    if (n === 0) return this.host.writer
    const last = this.queue[n - 1] as Deferred
    if (last.ready) return last.w
    const tail: Deferred = { w: new RespWriter(1024), ready: true }
    this.queue.push(tail)
    return tail.w
  }

  /** A place in the reply order for a reply written later into `w`; then call complete(). */
  defer(): Deferred {
    const d: Deferred = { w: new RespWriter(256), ready: false }
    this.queue.push(d)
    return d
  }

  complete(d: Deferred): void {
    d.ready = true
    // Sent after the current call stack: completions never write while another
    // connection's replies sit in the shared writer, and several go out in one write.
    if (!this.flushScheduled) {
      this.flushScheduled = true
      process.nextTick(() => {
        this.flushScheduled = false
        this.run()
      })
    }
  }

  /** Ends the connection once the replies queued so far are sent (QUIT). */
  closeAfterReplies(): void {
    this.closing = true
    if (!this.running && this.queue.length === 0) this.end()
  }

  /**
   * Shutdown: reads no more, answers the commands already received, then ends the
   * connection (a command cut in half by the stop is dropped).
   */
  drain(): void {
    this.draining = true
    this.socket.pause()
    if (!this.running) this.run()
  }

  /** Cuts the connection now (shutdown past its drain time). */
  destroy(): void {
    this.socket.destroy()
  }

  /** Bytes read into the socket's reused buffer: handled, and what must outlive the call copied, before returning. */
  receive(bytes: Buffer): void {
    this.onData(bytes)
    this.parser.detach()
    this.account()
  }

  /**
   * Charges the bytes of unfinished commands the parser holds to the request budget (bytes,
   * not buffer capacity: pages never written are never resident). A connection whose held
   * bytes grow past what the budget has left, beyond one read's worth, is refused and closed:
   * the command it was sending is the new work the node cannot take now.
   */
  private account(): void {
    this.parser.trim()
    const held = this.parser.buffered
    if (held === this.charged) return
    const ok = this.host.stats.requestBudget.move(this.charged, held)
    this.charged = held
    if (ok || held <= BUDGET_FREE_BYTES || this.closing) return
    this.host.stats.busyRefusals++
    this.parser.discard()
    this.host.stats.requestBudget.give(this.charged)
    this.charged = 0
    this.out().error(BUSY_REPLY)
    this.closing = true
    this.run()
  }

  /** The next turn after a yield: a fresh share, the commands waiting run, reading resumes. */
  private readonly nextTurn = (): void => {
    this.yielded = false
    this.spent = 0
    this.run()
    this.account()
  }

  private onData(chunk: Buffer): void {
    this.host.stats.netInputBytes += chunk.length
    if (this.closing) return
    this.lastActiveAt = Date.now()
    this.parser.push(chunk)
    this.run()
  }

  private onDrain(): void {
    if (this.sendTimer) {
      clearTimeout(this.sendTimer)
      this.sendTimer = undefined
    }
    this.run()
  }

  /** Runs the complete commands received, sends the replies, and decides about reading on. */
  private run(): void {
    if (this.running || this.socket.destroyed) return
    this.running = true
    this.parserEmpty = false
    try {
      for (;;) {
        let full = false
        while (!this.closing && !this.yielded) {
          if (this.blocked()) {
            full = true
            break
          }
          let more: boolean
          try {
            more = this.parser.next()
          } catch (err) {
            this.host.stats.protocolErrors++
            this.out().error(`ERR ${errorMessage(err)}${this.isAuthed ? '' : ' (not authenticated: AUTH first)'}`)
            this.closing = true
            break
          }
          if (!more) {
            this.parserEmpty = true
            break
          }
          this.host.dispatch(this)
          if ((this.spent += this.parser.argc) >= TURN_ARGS) {
            this.yielded = true
            setImmediate(this.nextTurn)
          }
        }
        this.flush()
        if (!full || this.blocked()) break
      }
    } finally {
      this.running = false
    }
    if ((this.closing || (this.draining && this.parserEmpty)) && this.queue.length === 0) {
      this.end()
      return
    }
    this.updateReading()
  }

  /**
   * Ends the connection once its replies are out (shutdown, QUIT, a protocol error, a
   * refusal). Its reads go on (and are dropped) so the client's close is seen: a socket left
   * paused never learns of it and would hold a stopping node until its drain timeout. A
   * client that keeps its side open is cut shortly after its last reply, one that stopped
   * reading after the send timeout.
   */
  private end(): void {
    if (this.socket.writableEnded) {
      // Called again after a 'drain': replies still leaving get a new send timeout.
      if (!this.socket.writableFinished) this.armSendTimer()
      return
    }
    this.closing = true
    this.socket.end()
    this.socket.resume()
    cutAfterLastReply(this.socket)
    if (!this.socket.writableFinished) this.armSendTimer()
  }

  /** Too many replies waiting: read no more commands until they move. */
  private blocked(): boolean {
    if (this.queue.length >= MAX_DEFERRED) return true
    let waiting = this.socket.writableLength
    if (this.queue.length === 0) waiting += this.host.writer.length
    else for (const d of this.queue) waiting += d.w.length
    return waiting > this.host.opts.outputHighWaterBytes
  }

  private flush(): void {
    const w = this.host.writer
    // Replies that were deferred (forwarded or cold reads) and are ready now follow the
    // shared writer's in order, and leave with it in one send.
    while (this.queue.length > 0 && (this.queue[0] as Deferred).ready) {
      const d = this.queue.shift() as Deferred
      if (d.w.length > 0) w.raw(d.w.take())
    }
    if (w.length > 0) {
      const bytes = w.take()
      if (this.socket.destroyed) return
      this.send(bytes)
      // A socket that could not send everything at once keeps the buffer.
      w.release(this.socket.writableLength > 0)
    }
  }

  private updateReading(): void {
    const outputStuck = this.socket.writableLength > this.host.opts.outputHighWaterBytes
    const stop = outputStuck || this.yielded || this.blocked()
    if (stop && !this.paused) {
      this.paused = true
      this.socket.pause()
    } else if (!stop && this.paused && !this.draining) {
      this.paused = false
      this.socket.resume()
    }
    if (outputStuck) this.armSendTimer()
    else if (this.sendTimer) {
      clearTimeout(this.sendTimer)
      this.sendTimer = undefined
    }
  }

  private armSendTimer(): void {
    this.sendTimer ??= setTimeout(() => {
      this.host.stats.sendTimeouts++
      this.socket.destroy()
    }, this.host.opts.sendTimeoutMs)
  }

  private onClose(): void {
    if (this.sendTimer) clearTimeout(this.sendTimer)
    this.sendTimer = undefined
    this.closing = true
    this.queue.length = 0
    this.parser.discard()
    this.host.stats.requestBudget.give(this.charged)
    this.charged = 0
    this.host.closed(this)
  }
}
