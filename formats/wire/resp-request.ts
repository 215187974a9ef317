import { StoreError } from '../../common/errors'
import { CR, DEFAULT_REQUEST_LIMITS, LF, type RespRequestLimits } from './resp'

const STAR = 0x2a
const DOLLAR = 0x24
const MINUS = 0x2d
/** Longest `*N\r\n` / `$N\r\n` header: sign, 10 digits, CRLF and slack. */
const MAX_HEADER = 16
const EMPTY = Buffer.alloc(0)
/** An owned input buffer above this is dropped once nothing is retained in it. */
const KEEP_OWNED = 64 << 10

function protocolError(what: string): StoreError {
  return new StoreError('RO_BAD_REQUEST', `Protocol error: ${what}`)
}

/**
 * Incremental parser of client requests: `*N\r\n` followed by N `$len\r\n<bytes>\r\n`
 * arguments (what every client library sends), or one inline line of space-separated
 * words (telnet, `redis-cli` in some modes). Bytes go in with `push()`; each `next()` that
 * returns true leaves one command in `argc`/`args`/`starts`/`ends`: argument i is
 * `args[starts[i] .. ends[i])`. Nothing is decoded into strings and no Buffer is made per
 * argument: the hot path compares bytes where they arrived.
 *
 * The views are valid until the next `push()` or `next()`. A command that arrives in
 * pieces is resumed where it stopped (no re-parsing), and only its own bytes are copied.
 * A breach of the limits or of the framing throws StoreError RO_BAD_REQUEST with Redis's
 * "Protocol error: ..." wording; the connection must then answer it and close, since the
 * stream can no longer be trusted.
 */
export class RespRequestParser {
  /** Arguments of the last command parsed. */
  argc = 0

  /**
   * Other limits from the next command on (a connection before and after AUTH). The
   * command being read, if any, is checked against them from its next header.
   */
  setLimits(limits: RespRequestLimits): void {
    this.limits = limits
  }

  /** The limits in force. */
  get currentLimits(): RespRequestLimits {
    return this.limits
  }
  /** The buffer holding the arguments' bytes. */
  args: Buffer = EMPTY
  starts: Int32Array
  ends: Int32Array

  private input: Buffer = EMPTY
  private owned: Buffer | undefined
  private pos = 0
  private end = 0
  /** Start of the command being parsed; everything before it is consumed. */
  private cmdStart = 0
  /** Arguments announced by the `*N` header being read; -1 between commands. */
  private want = -1
  /** Length of the bulk argument whose `$len` header was read; -1 otherwise. */
  private bulk = -1
  /** Inline commands: where the search for the end of line resumes. */
  private scanFrom = 0
  private inline: Buffer | undefined
  private headerValue = 0
  private limits: RespRequestLimits

  constructor(limits: Partial<RespRequestLimits> = {}) {
    this.limits = { ...DEFAULT_REQUEST_LIMITS, ...limits }
    const n = Math.min(this.limits.maxArgs, 64)
    this.starts = new Int32Array(n)
    this.ends = new Int32Array(n)
  }

  /** Bytes received and not yet consumed by a complete command. */
  get buffered(): number {
    return this.end - this.cmdStart
  }

  /** Lets a large buffer of the parser's go once nothing is retained in it (a large command is done). */
  trim(): void {
    if (this.cmdStart === this.end && this.owned !== undefined && this.owned.length > KEEP_OWNED) {
      if (this.input === this.owned) {
        this.input = this.args = EMPTY
        this.pos = this.end = this.cmdStart = this.scanFrom = 0
      }
      this.owned = undefined
    }
  }

  /** Drops everything held, the command being read included (a connection refused and closing). */
  discard(): void {
    this.input = this.args = EMPTY
    this.owned = undefined
    this.inline = undefined
    this.pos = this.end = this.cmdStart = this.scanFrom = 0
    this.want = this.bulk = -1
    this.argc = 0
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return
    if (this.cmdStart === this.end) {
      // Nothing retained: parse the chunk where it is.
      if (this.owned && this.owned.length > KEEP_OWNED) this.owned = undefined
      this.input = chunk
      this.pos = this.cmdStart = this.scanFrom = 0
      this.end = chunk.length
      return
    }
    this.retain(chunk.length)
    chunk.copy(this.input, this.end)
    this.end += chunk.length
  }

  /**
   * The buffer last pushed is about to be reused by whoever owns it (a socket's read
   * buffer, server/resp/read-buffer-socket.ts): the bytes of commands not yet parsed are
   * copied into the parser's own buffer. The views of the last command end here too.
   */
  detach(): void {
    if (this.input === this.owned) return
    if (this.end > this.cmdStart) {
      this.retain(0)
      return
    }
    this.input = this.args = EMPTY
    this.pos = this.end = this.cmdStart = this.scanFrom = 0
  }

  /** Parses the next complete command; false when more bytes are needed. */
  next(): boolean {
    for (;;) {
      if (this.want < 0) {
        if (this.pos >= this.end) return false
        if (this.input[this.pos] !== STAR) {
          const r = this.parseInline()
          if (r === 0) continue // empty line
          return r > 0
        }
        if (!this.readHeader()) return this.needMore()
        const n = this.headerValue
        if (n <= 0) {
          // `*0` and `*-1` carry no command (Redis skips them too).
          this.cmdStart = this.pos
          continue
        }
        if (n > this.limits.maxArgs) throw protocolError(`invalid multibulk length (${n} arguments, at most ${this.limits.maxArgs})`)
        this.want = n
        this.argc = 0
        if (n > this.starts.length) this.growArgs(n)
      }
      while (this.argc < this.want) {
        if (this.bulk < 0) {
          if (this.pos >= this.end) return this.needMore()
          const c = this.input[this.pos] as number
          if (c !== DOLLAR) throw protocolError(`expected '$', got '${printable(c)}'`)
          if (!this.readHeader()) return this.needMore()
          const len = this.headerValue
          if (len < 0 || len > this.limits.maxBulkBytes)
            throw protocolError(`invalid bulk length (at most ${this.limits.maxBulkBytes} bytes)`)
          this.bulk = len
          // Refuse at once what could never fit, instead of buffering toward it.
          if (this.pos - this.cmdStart + len + 2 > this.limits.maxCommandBytes) throw this.tooBig()
        }
        const len = this.bulk
        if (this.end - this.pos < len + 2) return this.needMore()
        if (this.input[this.pos + len] !== CR || this.input[this.pos + len + 1] !== LF)
          throw protocolError('expected CRLF after a bulk argument')
        this.starts[this.argc] = this.pos
        this.ends[this.argc] = this.pos + len
        this.argc++
        this.pos += len + 2
        this.bulk = -1
      }
      this.want = -1
      this.cmdStart = this.pos
      this.args = this.input
      return true
    }
  }

  /** Reads `<type><int>\r\n` at pos into headerValue; false when the CRLF has not arrived. */
  private readHeader(): boolean {
    const b = this.input
    let i = this.pos + 1
    let neg = false
    if (i < this.end && b[i] === MINUS) {
      neg = true
      i++
    }
    let n = 0
    let digits = 0
    while (i < this.end) {
      const c = b[i] as number
      if (c < 0x30 || c > 0x39) break
      n = n * 10 + (c - 0x30)
      if (++digits > 10) throw this.badHeader()
      i++
    }
    if (i >= this.end) {
      if (this.end - this.pos > MAX_HEADER) throw this.badHeader()
      return false
    }
    if (b[i] !== CR || digits === 0) throw this.badHeader()
    if (i + 1 >= this.end) return false
    if (b[i + 1] !== LF) throw this.badHeader()
    this.pos = i + 2
    this.headerValue = neg ? -n : n
    return true
  }

  private badHeader(): StoreError {
    return protocolError(this.input[this.pos] === STAR ? 'invalid multibulk length' : 'invalid bulk length')
  }

  private tooBig(): StoreError {
    return protocolError(`command larger than the query buffer limit of ${this.limits.maxCommandBytes} bytes`)
  }

  private needMore(): false {
    if (this.end - this.cmdStart > this.limits.maxCommandBytes) throw this.tooBig()
    return false
  }

  /** 1: a command; 0: an empty line was skipped; -1: the line is incomplete. */
  private parseInline(): number {
    const b = this.input
    let nl = -1
    for (let i = Math.max(this.scanFrom, this.pos); i < this.end; i++) {
      if (b[i] === LF) {
        nl = i
        break
      }
    }
    if (nl < 0) {
      if (this.end - this.cmdStart > this.limits.maxInlineBytes) throw protocolError('too big inline request')
      this.scanFrom = this.end
      return -1
    }
    if (nl - this.cmdStart > this.limits.maxInlineBytes) throw protocolError('too big inline request')
    const lineEnd = nl > this.pos && b[nl - 1] === CR ? nl - 1 : nl
    this.splitInline(this.pos, lineEnd)
    this.pos = this.cmdStart = this.scanFrom = nl + 1
    return this.argc > 0 ? 1 : 0
  }

  /**
   * Splits an inline line into arguments as Redis does (sdssplitargs): runs of blanks
   * separate words; "double quotes" take \n \r \t \b \a \\ \" and \xHH escapes, 'single
   * quotes' take \'; a closing quote must end the word.
   */
  private splitInline(from: number, to: number): void {
    const b = this.input
    if (!this.inline || this.inline.length < to - from) this.inline = Buffer.allocUnsafe(Math.max(256, to - from))
    const out = this.inline
    let o = 0
    let i = from
    this.argc = 0
    for (;;) {
      while (i < to && isBlank(b[i] as number)) i++
      if (i >= to) break
      if (this.argc >= this.limits.maxArgs) throw protocolError(`too many arguments (at most ${this.limits.maxArgs})`)
      if (this.argc >= this.starts.length) this.growArgs(this.argc + 1)
      const start = o
      const q = b[i] as number
      if (q === 0x22 || q === 0x27) {
        i++
        let closed = false
        while (i < to) {
          const c = b[i] as number
          if (c === q) {
            closed = true
            i++
            break
          }
          if (c === 0x5c && i + 1 < to) {
            const e = b[i + 1] as number
            if (q === 0x27) {
              out[o++] = e === 0x27 ? 0x27 : c
              i += e === 0x27 ? 2 : 1
              continue
            }
            if (e === 0x78 && i + 3 < to && isHex(b[i + 2] as number) && isHex(b[i + 3] as number)) {
              out[o++] = (hexVal(b[i + 2] as number) << 4) | hexVal(b[i + 3] as number)
              i += 4
              continue
            }
            out[o++] = e === 0x6e ? LF : e === 0x72 ? CR : e === 0x74 ? 0x09 : e === 0x62 ? 0x08 : e === 0x61 ? 0x07 : e
            i += 2
            continue
          }
          out[o++] = c
          i++
        }
        if (!closed || (i < to && !isBlank(b[i] as number))) throw protocolError('unbalanced quotes in request')
      } else {
        while (i < to && !isBlank(b[i] as number)) out[o++] = b[i++] as number
      }
      if (o - start > this.limits.maxBulkBytes) throw protocolError(`invalid bulk length (at most ${this.limits.maxBulkBytes} bytes)`)
      this.starts[this.argc] = start
      this.ends[this.argc] = o
      this.argc++
    }
    this.args = out
  }

  /** Keeps [cmdStart, end) at the front of an owned buffer with room for `extra` more bytes. */
  private retain(extra: number): void {
    const keep = this.end - this.cmdStart
    const need = keep + extra
    const inPlace = this.input === this.owned && this.input.length >= need
    // A borrowed input (detach) moves into the parser's own buffer when that one is large enough.
    const reuse = !inPlace && this.owned !== undefined && this.owned !== this.input && this.owned.length >= need
    const target = inPlace ? this.input : reuse ? (this.owned as Buffer) : Buffer.allocUnsafe(Math.max(need, keep * 2, 4096))
    if (this.cmdStart > 0 || !inPlace) this.input.copy(target, 0, this.cmdStart, this.end)
    const shift = this.cmdStart
    if (shift > 0) {
      for (let i = 0; i < this.argc && this.want >= 0; i++) {
        this.starts[i] = (this.starts[i] as number) - shift
        this.ends[i] = (this.ends[i] as number) - shift
      }
    }
    this.pos -= shift
    this.scanFrom = Math.max(0, this.scanFrom - shift)
    this.end = keep
    this.cmdStart = 0
    this.input = this.owned = target
  }

  private growArgs(n: number): void {
    const size = Math.min(this.limits.maxArgs, Math.max(n, this.starts.length * 2))
    const s = new Int32Array(size)
    const e = new Int32Array(size)
    s.set(this.starts)
    e.set(this.ends)
    this.starts = s
    this.ends = e
  }
}

function isBlank(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === LF || c === CR || c === 0x0b || c === 0x0c
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

function hexVal(c: number): number {
  return c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10
}

function printable(c: number): string {
  return c >= 0x20 && c < 0x7f && c !== 0x27 ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`
}
