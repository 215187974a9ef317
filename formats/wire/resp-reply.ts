import { StoreError } from '../../common/errors'
import { CR, DEFAULT_REPLY_LIMITS, LF, RespErrorReply, RespMap, RespVerbatim, type RespReplyLimits, type RespValue } from './resp'

const EMPTY = Buffer.alloc(0)
/** Returned by `next()` while a reply is incomplete. */
export const NEED_MORE: unique symbol = Symbol('need more')
/** Internal: parsing ran out of bytes. */
const SHORT: unique symbol = Symbol('short')
type Parsed = RespValue | typeof SHORT

function bad(what: string): StoreError {
  return new StoreError('RO_CORRUPT', `RESP reply: ${what}`)
}

export interface ReplyParserOptions {
  /**
   * Copy bulk strings out of the input (default true). Without copies a value is a view
   * valid only until the next `push()`: for callers that consume it at once.
   */
  readonly copyBulk?: boolean
  readonly limits?: Partial<RespReplyLimits>
}

/**
 * Incremental parser of server replies, RESP2 and RESP3: simple strings (string), errors
 * (RespErrorReply, a value), integers (number), bulk strings (Buffer), null (null), arrays,
 * sets and pushes (arrays), maps (RespMap), booleans, doubles (number), big numbers
 * (bigint), verbatim strings (RespVerbatim); attributes are read and dropped. A reply that
 * arrives in pieces is parsed again from its start once enough bytes are there: the
 * parser remembers how many bytes the last attempt needed, so a large reply is not
 * rescanned for every small piece. Framing errors are StoreError RO_CORRUPT.
 */
export class RespReplyParser {
  private buf: Buffer = EMPTY
  private pos = 0
  private end = 0
  /** Bytes (absolute end offset in buf) the last incomplete attempt needed at least. */
  private need = 0
  /** buf was allocated here (not a caller's chunk), so bytes may be appended to it. */
  private owned = false
  private readonly copy: boolean
  private readonly limits: RespReplyLimits

  constructor(opts: ReplyParserOptions = {}) {
    this.copy = opts.copyBulk ?? true
    this.limits = { ...DEFAULT_REPLY_LIMITS, ...opts.limits }
  }

  get buffered(): number {
    return this.end - this.pos
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return
    if (this.pos === this.end) {
      this.buf = chunk
      this.owned = false
      this.pos = 0
      this.end = chunk.length
      this.need = 0
      return
    }
    if (this.owned && this.buf.length - this.end >= chunk.length) {
      // Appending never moves bytes a view handed out earlier may still point to.
      chunk.copy(this.buf, this.end)
      this.end += chunk.length
      return
    }
    const keep = this.end - this.pos
    const size = Math.max(keep + chunk.length, this.need - this.pos, 2 * keep)
    const nb = Buffer.allocUnsafe(size)
    this.buf.copy(nb, 0, this.pos, this.end)
    chunk.copy(nb, keep)
    this.need = Math.max(0, this.need - this.pos)
    this.buf = nb
    this.owned = true
    this.pos = 0
    this.end = keep + chunk.length
  }

  /** The next complete reply, or NEED_MORE. */
  next(): RespValue | typeof NEED_MORE {
    if (this.pos >= this.end || this.end < this.need) return NEED_MORE
    const start = this.pos
    const v = this.value(0)
    if (v === SHORT) {
      this.pos = start
      return NEED_MORE
    }
    this.need = 0
    return v
  }

  private value(depth: number): Parsed {
    if (this.pos >= this.end) return this.short(this.pos + 1)
    const type = this.buf[this.pos] as number
    switch (type) {
      case 0x2b: // + simple string
      case 0x2d: // - error
      case 0x2c: // , double
      case 0x28: // ( big number
      case 0x23: {
        // # boolean
        const line = this.line()
        if (line === SHORT) return SHORT
        if (type === 0x2b) return line
        if (type === 0x2d) return new RespErrorReply(line)
        if (type === 0x2c) return parseDouble(line)
        if (type === 0x28) {
          if (!/^-?\d+$/.test(line)) throw bad(`invalid big number ${JSON.stringify(line.slice(0, 40))}`)
          return BigInt(line)
        }
        if (line !== 't' && line !== 'f') throw bad('invalid boolean')
        return line === 't'
      }
      case 0x3a: {
        const n = this.int()
        return n === SHORT ? SHORT : n
      }
      case 0x5f: {
        // _ null
        const line = this.line()
        if (line === SHORT) return SHORT
        if (line !== '') throw bad('invalid null')
        return null
      }
      case 0x24: // $ bulk
      case 0x3d: {
        // = verbatim
        const at = this.pos
        const n = this.int()
        if (n === SHORT) return SHORT
        if (n < 0) {
          if (type === 0x24 && n === -1) return null
          throw bad('invalid bulk length')
        }
        if (n > this.limits.maxBulkBytes) throw bad(`bulk string of ${n} bytes, more than ${this.limits.maxBulkBytes}`)
        if (this.end - this.pos < n + 2) {
          const need = this.pos + n + 2
          this.pos = at
          return this.short(need)
        }
        if (this.buf[this.pos + n] !== CR || this.buf[this.pos + n + 1] !== LF) throw bad('bulk string without CRLF')
        const view = this.buf.subarray(this.pos, this.pos + n)
        this.pos += n + 2
        if (type === 0x3d) {
          if (n < 4 || view[3] !== 0x3a) throw bad('invalid verbatim string')
          return new RespVerbatim(view.toString('latin1', 0, 3), Buffer.from(view.subarray(4)))
        }
        return this.copy ? Buffer.from(view) : view
      }
      case 0x2a: // * array
      case 0x7e: // ~ set
      case 0x3e: // > push
      case 0x25: // % map
      case 0x7c: {
        // | attribute
        const n = this.int()
        if (n === SHORT) return SHORT
        if (n < 0) {
          if (type === 0x2a && n === -1) return null
          throw bad('invalid aggregate length')
        }
        if (n > this.limits.maxElements) throw bad(`aggregate of ${n} elements, more than ${this.limits.maxElements}`)
        if (depth >= this.limits.maxDepth) throw bad(`nested deeper than ${this.limits.maxDepth}`)
        const count = type === 0x25 || type === 0x7c ? n * 2 : n
        const items: RespValue[] = []
        for (let i = 0; i < count; i++) {
          const v = this.value(depth + 1)
          if (v === SHORT) return SHORT
          items.push(v)
        }
        if (type === 0x7c) return this.value(depth)
        if (type !== 0x25) return items
        const entries: [RespValue, RespValue][] = []
        for (let i = 0; i < items.length; i += 2) entries.push([items[i] as RespValue, items[i + 1] as RespValue])
        return new RespMap(entries)
      }
      default:
        throw bad(`unknown type byte 0x${type.toString(16).padStart(2, '0')}`)
    }
  }

  private short(need: number): typeof SHORT {
    this.need = Math.max(this.need, need)
    return SHORT
  }

  /** The rest of the line after the type byte, as text; pos moves past the CRLF. */
  private line(): string | typeof SHORT {
    const b = this.buf
    for (let i = this.pos + 1; i < this.end; i++) {
      if (b[i] === LF) {
        if (b[i - 1] !== CR || i - 1 < this.pos + 1) throw bad('line without CRLF')
        const text = b.toString('utf8', this.pos + 1, i - 1)
        this.pos = i + 1
        return text
      }
    }
    if (this.end - this.pos > 1 << 20) throw bad('line longer than 1 MiB')
    return this.short(this.end + 1)
  }

  private int(): number | typeof SHORT {
    const line = this.line()
    if (line === SHORT) return SHORT
    if (!/^-?\d{1,16}$/.test(line)) throw bad(`invalid integer ${JSON.stringify(line.slice(0, 40))}`)
    return Number(line)
  }
}

function parseDouble(text: string): number {
  if (text === 'inf') return Infinity
  if (text === '-inf') return -Infinity
  if (text === 'nan') return NaN
  const n = Number(text)
  if (text === '' || Number.isNaN(n)) throw bad('invalid double')
  return n
}
