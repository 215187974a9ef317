import { connect, type Socket } from 'node:net'

/**
 * HTTP/1.1 over a raw TCP socket, for conformance tests: the test writes exact bytes
 * (pipelined requests, chunked bodies, malformed requests) and reads the responses one by
 * one, framed by Content-Length, chunked encoding, or the end of the connection, so that
 * several responses in one read are told apart and their order checked.
 */

export interface RawResponse {
  /** "HTTP/1.1" or "HTTP/1.0". */
  readonly version: string
  readonly status: number
  readonly reason: string
  /** Header fields in the order received, names lower-cased. */
  readonly headers: readonly (readonly [string, string])[]
  /** The body, chunked encoding removed. */
  readonly body: Buffer
  readonly chunked: boolean
  /** Every byte of the response as received (status line to the end of the body). */
  readonly raw: Buffer
}

/** The value of header `name` (the first when repeated), or undefined. */
export function headerOf(r: RawResponse, name: string): string | undefined {
  const lower = name.toLowerCase()
  return r.headers.find(([n]) => n === lower)?.[1]
}

export interface ReadOptions {
  /** The response answers a HEAD request: no body whatever its headers say. */
  readonly head?: boolean
  /** Reject when no complete response arrives within this long. Default 10 s. */
  readonly timeoutMs?: number
}

/** A response incomplete in `buf`: more bytes are needed. */
const INCOMPLETE = Symbol('incomplete')

/**
 * Parses the response at the start of `buf`: the response and the bytes it took, or
 * INCOMPLETE. `ended`: no more bytes will come (a body without length ends there).
 */
export function parseResponse(
  buf: Buffer,
  opts: { head?: boolean; ended?: boolean } = {},
): { response: RawResponse; used: number } | typeof INCOMPLETE {
  const headEnd = buf.indexOf('\r\n\r\n')
  if (headEnd < 0) return INCOMPLETE
  const lines = buf.subarray(0, headEnd).toString('latin1').split('\r\n')
  const m = /^(HTTP\/\d\.\d) (\d{3}) ?(.*)$/.exec(lines[0] ?? '')
  if (!m) throw new Error(`not an HTTP status line: ${JSON.stringify((lines[0] ?? '').slice(0, 200))}`)
  const status = Number(m[2])
  const headers = lines.slice(1).map((l): [string, string] => {
    const colon = l.indexOf(':')
    if (colon <= 0) throw new Error(`malformed header line: ${JSON.stringify(l.slice(0, 200))}`)
    return [l.slice(0, colon).toLowerCase(), l.slice(colon + 1).trim()]
  })
  const base = { version: m[1] as string, status, reason: m[3] ?? '', headers }
  let at = headEnd + 4
  const done = (body: Buffer, chunked: boolean): { response: RawResponse; used: number } => ({
    response: { ...base, body, chunked, raw: Buffer.from(buf.subarray(0, at)) },
    used: at,
  })
  const get = (name: string): string | undefined => headers.find(([n]) => n === name)?.[1]
  if (opts.head || (status >= 100 && status < 200) || status === 204 || status === 304) return done(Buffer.alloc(0), false)
  if (/\bchunked\b/i.test(get('transfer-encoding') ?? '')) {
    const parts: Buffer[] = []
    for (;;) {
      const eol = buf.indexOf('\r\n', at)
      if (eol < 0) return INCOMPLETE
      const size = Number.parseInt(buf.subarray(at, eol).toString('latin1').split(';')[0] ?? '', 16)
      if (!Number.isSafeInteger(size) || size < 0) throw new Error(`bad chunk size line at byte ${at}`)
      if (size === 0) {
        // Trailer fields (if any) end with an empty line.
        const end = buf.indexOf('\r\n\r\n', eol)
        if (end < 0) return INCOMPLETE
        at = end + 4
        return done(Buffer.concat(parts), true)
      }
      if (buf.length < eol + 2 + size + 2) return INCOMPLETE
      parts.push(buf.subarray(eol + 2, eol + 2 + size))
      at = eol + 2 + size + 2
    }
  }
  const length = get('content-length')
  if (length !== undefined) {
    const n = Number(length)
    if (buf.length < at + n) return INCOMPLETE
    at += n
    return done(Buffer.from(buf.subarray(headEnd + 4, at)), false)
  }
  // Neither: the body runs to the end of the connection.
  if (!opts.ended) return INCOMPLETE
  at = buf.length
  return done(Buffer.from(buf.subarray(headEnd + 4)), false)
}

/** One raw connection; `read` returns the responses in the order they arrive. */
export class RawHttpConnection {
  private buf: Buffer = Buffer.alloc(0)
  private ended = false
  private wake: (() => void) | undefined
  /** Bytes received in total (including those already parsed). */
  received = 0
  /** Resolves when the connection is closed (by either side, or reset), with the socket error if any. */
  readonly closed: Promise<{ error?: string }>

  private constructor(readonly socket: Socket) {
    this.closed = new Promise((resolve) => {
      let error: string | undefined
      socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message))
      socket.on('close', () => {
        this.ended = true
        this.wake?.()
        resolve(error === undefined ? {} : { error })
      })
    })
    socket.on('data', (d: Buffer) => {
      this.received += d.length
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d])
      this.wake?.()
    })
    socket.on('end', () => {
      this.ended = true
      this.wake?.()
    })
  }

  static open(port: number, host = '127.0.0.1'): Promise<RawHttpConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, host)
      socket.once('error', reject)
      socket.once('connect', () => {
        socket.off('error', reject)
        resolve(new RawHttpConnection(socket))
      })
    })
  }

  /** Writes bytes as given (strings as latin1: one char, one byte). */
  write(data: string | Buffer): void {
    if (!this.socket.destroyed) this.socket.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data)
  }

  /** The server closed or reset the connection (or this side destroyed it). */
  get isEnded(): boolean {
    return this.ended
  }

  /** Bytes received and not yet returned by `read`. */
  unread(): Buffer {
    return this.buf
  }

  /** The next complete response; rejects when the connection ends first or after `timeoutMs`. */
  async read(opts: ReadOptions = {}): Promise<RawResponse> {
    const deadline = Date.now() + (opts.timeoutMs ?? 10_000)
    for (;;) {
      const parsed = parseResponse(this.buf, { head: opts.head, ended: this.ended })
      if (parsed !== INCOMPLETE) {
        this.buf = this.buf.subarray(parsed.used)
        return parsed.response
      }
      if (this.ended) throw new Error(`connection ended before a complete response (${this.buf.length} bytes pending)`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no complete response within ${opts.timeoutMs ?? 10_000} ms (${this.buf.length} bytes pending)`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.wake = () => {
          clearTimeout(timer)
          this.wake = undefined
          resolve()
        }
      })
    }
  }

  /** Waits for the connection to end; rejects after `timeoutMs`. */
  async waitClosed(timeoutMs = 10_000): Promise<{ error?: string }> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`connection still open after ${timeoutMs} ms`)), timeoutMs)
    })
    try {
      return await Promise.race([this.closed, late])
    } finally {
      clearTimeout(timer)
    }
  }

  destroy(): void {
    this.socket.destroy()
  }
}

/** One request on a fresh connection: its response, then the connection is destroyed. */
export async function rawExchange(port: number, request: string | Buffer, opts: ReadOptions = {}): Promise<RawResponse> {
  const c = await RawHttpConnection.open(port)
  try {
    c.write(request)
    return await c.read(opts)
  } finally {
    c.destroy()
  }
}
