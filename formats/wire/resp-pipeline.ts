import type { RespValue } from './resp'
import { NEED_MORE, RespReplyParser, type ReplyParserOptions } from './resp-reply'
import { RespWriter } from './resp-writer'

/** Called with the reply of one command, or with the error that ended the connection. */
export type ReplyCallback = (err: Error | undefined, reply: RespValue | undefined) => void

/**
 * Pipelined request/reply matching over any byte transport, socket-free: commands are
 * queued with `send()` (their bytes gather in one buffer until the owner calls
 * `flush()` and writes them, so many commands leave in one write), replies are fed
 * with `onData()` and handed to the callbacks in the order the commands were sent, which
 * is the order a RESP server answers in. `fail()` ends every waiting command with an error
 * (the transport broke, or a reply was malformed: the stream is then out of step and
 * must be closed).
 */
export class RespPipeline {
  private readonly out = new RespWriter(4096)
  private readonly parser: RespReplyParser
  private readonly waiting = new Fifo<ReplyCallback>()
  private failed: Error | undefined

  constructor(opts: ReplyParserOptions = {}) {
    this.parser = new RespReplyParser(opts)
  }

  /** Commands sent and not answered yet. */
  get pending(): number {
    return this.waiting.length
  }

  /** Bytes queued for the transport, not taken yet. */
  get queuedBytes(): number {
    return this.out.length
  }

  /** Queues one encoded command (see encodeCommand); `cb` gets its reply. */
  send(command: Uint8Array, cb: ReplyCallback): void {
    if (this.failed) {
      cb(this.failed, undefined)
      return
    }
    this.out.raw(command)
    this.waiting.push(cb)
  }

  /**
   * Hands the queued bytes to `write`, which returns whether the transport still holds
   * them (a socket that could not send them at once): then they are left to it and the
   * pipeline continues on a fresh buffer, else the buffer is reused.
   */
  flush(write: (bytes: Buffer) => boolean): void {
    if (this.out.length === 0) return
    this.out.release(write(this.out.take()))
  }

  /**
   * Bytes from the transport. A reply nobody waits for, or malformed bytes, fail the
   * pipeline (returns the error; the owner closes the transport).
   */
  onData(chunk: Buffer): Error | undefined {
    if (this.failed) return this.failed
    this.parser.push(chunk)
    for (;;) {
      let reply: RespValue | typeof NEED_MORE
      try {
        reply = this.parser.next()
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err))
        this.fail(e)
        return e
      }
      if (reply === NEED_MORE) return undefined
      const cb = this.waiting.shift()
      if (!cb) {
        const e = new Error('a reply arrived that no command was waiting for')
        this.fail(e)
        return e
      }
      cb(undefined, reply)
    }
  }

  /** Ends every waiting command with `err`; later sends fail at once. */
  fail(err: Error): void {
    this.failed ??= err
    this.out.take()
    for (let cb = this.waiting.shift(); cb; cb = this.waiting.shift()) cb(err, undefined)
  }
}

/** A first-in first-out queue without Array#shift's copying. */
export class Fifo<T> {
  private items: (T | undefined)[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(item: T): void {
    this.items.push(item)
  }

  peek(): T | undefined {
    return this.items[this.head]
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined
    const item = this.items[this.head]
    this.items[this.head++] = undefined
    if (this.head === this.items.length) {
      this.items = []
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return item
  }
}
