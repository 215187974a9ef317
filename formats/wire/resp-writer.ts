import { GrowableBuffer } from '../../common/growable-buffer'
import { CR, LF, type RespProto } from './resp'

/** `$`, up to 16 digits, CRLF, and the CRLF after the payload. */
const BULK_OVERHEAD = 21

/**
 * Encodes RESP replies (and commands, which are arrays of bulk strings) into one growing
 * buffer: a connection writes every reply of a read event here and sends the bytes with
 * one socket write. Numbers are written digit by digit, values with one memcpy; nothing
 * allocates per reply unless the buffer has to grow.
 *
 * `take()` hands the bytes out and starts over. Whether the buffer can be reused after a
 * write is the owner's call (see `release()`): a socket may still hold it.
 */
export class RespWriter extends GrowableBuffer {
  constructor(private readonly initialSize = 16 << 10) {
    super(initialSize)
  }

  /** The bytes written so far (a view), and the writer starts over on the same buffer. */
  take(): Buffer {
    const out = this.bytes()
    this.pos = 0
    return out
  }

  /**
   * After the bytes of `take()` were given to a socket that may still hold them: continue
   * on a fresh buffer. Also drops a buffer that grew past `maxKeep` bytes.
   */
  release(stillHeld: boolean, maxKeep = 256 << 10): void {
    if (stillHeld || this.buf.length > maxKeep) this.buf = Buffer.allocUnsafeSlow(this.initialSize)
    this.pos = 0
  }

  raw(bytes: Uint8Array): void {
    this.reserve(bytes.length)
    this.buf.set(bytes, this.pos)
    this.pos += bytes.length
  }

  /** `+text` — text chosen by the server: ASCII without CR or LF. */
  simple(text: string): void {
    this.line(0x2b, text)
  }

  /** `-CODE message`: CR and LF in the message become spaces. */
  error(text: string): void {
    this.line(0x2d, text)
  }

  integer(n: number): void {
    this.reserve(24)
    this.buf[this.pos++] = 0x3a
    if (n < 0) {
      this.buf[this.pos++] = 0x2d
      n = -n
    }
    this.digits(n)
    this.crlf()
  }

  bulk(bytes: Uint8Array): void {
    const n = bytes.length
    this.reserve(n + BULK_OVERHEAD)
    const b = this.buf
    b[this.pos++] = 0x24
    this.digits(n)
    b[this.pos++] = CR
    b[this.pos++] = LF
    if (n > 0) {
      b.set(bytes, this.pos)
      this.pos += n
    }
    b[this.pos++] = CR
    b[this.pos++] = LF
  }

  /** A bulk string of UTF-8 text. */
  bulkText(text: string): void {
    this.bulk(Buffer.from(text, 'utf8'))
  }

  /** A bulk string, or the null reply of the protocol when `bytes` is undefined. */
  bulkOrNull(bytes: Uint8Array | undefined, proto: RespProto): void {
    if (bytes === undefined) this.nil(proto)
    else this.bulk(bytes)
  }

  /** The null value: `$-1` in RESP2, `_` in RESP3. */
  nil(proto: RespProto): void {
    this.reserve(5)
    const b = this.buf
    if (proto === 3) {
      b[this.pos++] = 0x5f
    } else {
      b[this.pos++] = 0x24
      b[this.pos++] = 0x2d
      b[this.pos++] = 0x31
    }
    this.crlf()
  }

  array(n: number): void {
    this.header(0x2a, n)
  }

  /** A map of `n` pairs: `%n` in RESP3, an array of 2n elements in RESP2. */
  map(n: number, proto: RespProto): void {
    if (proto === 3) this.header(0x25, n)
    else this.header(0x2a, n * 2)
  }

  /** A set of `n` elements: `~n` in RESP3, an array in RESP2. */
  set(n: number, proto: RespProto): void {
    this.header(proto === 3 ? 0x7e : 0x2a, n)
  }

  /** Text meant for humans (INFO, CLIENT INFO): a verbatim string in RESP3, a bulk in RESP2. */
  verbatim(text: string, proto: RespProto): void {
    if (proto === 2) {
      this.bulkText(text)
      return
    }
    const body = Buffer.from(`txt:${text}`, 'utf8')
    this.header(0x3d, body.length)
    this.raw(body)
    this.reserve(2)
    this.crlf()
  }

  /** A command: an array of bulk strings. */
  command(args: readonly (Uint8Array | string)[]): void {
    this.array(args.length)
    for (const a of args) {
      if (typeof a === 'string') this.bulkText(a)
      else this.bulk(a)
    }
  }

  private header(type: number, n: number): void {
    this.reserve(20)
    this.buf[this.pos++] = type
    this.digits(n)
    this.crlf()
  }

  private line(type: number, text: string): void {
    const max = text.length * 3 + 3
    this.reserve(max)
    const b = this.buf
    b[this.pos++] = type
    const start = this.pos
    this.pos += b.write(text, this.pos, 'utf8')
    for (let i = start; i < this.pos; i++) if (b[i] === CR || b[i] === LF) b[i] = 0x20
    this.crlf()
  }

  private crlf(): void {
    this.buf[this.pos++] = CR
    this.buf[this.pos++] = LF
  }

  /** A non-negative integer in ASCII (room already reserved). */
  private digits(n: number): void {
    const b = this.buf
    if (n < 10) {
      b[this.pos++] = 0x30 + n
      return
    }
    let len = 1
    for (let t = n; t >= 10; t = Math.floor(t / 10)) len++
    let p = this.pos + len
    this.pos = p
    do {
      b[--p] = 0x30 + (n % 10)
      n = Math.floor(n / 10)
    } while (n > 0)
  }
}

/** One command as bytes (clients and the node's forwarder send these). */
export function encodeCommand(args: readonly (Uint8Array | string)[]): Buffer {
  const w = new RespWriter(64 + args.reduce((n, a) => n + a.length * (typeof a === 'string' ? 3 : 1) + BULK_OVERHEAD, 0))
  w.command(args)
  return Buffer.from(w.take())
}
