import { MAX_KEY_BYTES } from '../../formats/input/types'
import { BUDGET_FREE_BYTES } from './request-budget'

/**
 * The requests the fast read path answers itself (fast-connection.ts), parsed straight from
 * a connection's bytes into one object per connection, reused. Only one narrow shape is
 * accepted: `GET` or `HEAD /stores/<store>/keys/<key>` and `POST /stores/<store>/multi-get`
 * with a Content-Length body, HTTP/1.1, a Host, well-formed header fields. Anything else
 * (another method, route or version, a query, Transfer-Encoding, Expect, Upgrade, a repeated
 * Content-Length, Host, Connection or Authorization, a character node's parser would
 * refuse, a broken escape, a body over 64 KiB) is HANDOFF: node:http then parses the same
 * bytes and answers as it always has, so the two parsers never disagree on a request's
 * boundaries for any request this one answers.
 */
export interface FastRequest {
  method: number
  /** The store segment as sent (letters, digits, '.', '_', '-' only). */
  store: string
  /** GET/HEAD: the decoded key (a view of the request's bytes when it holds no escape). */
  key: Buffer
  /** POST: where the body starts; it ends where the request does. */
  bodyStart: number
  /** `Connection: close`: answer, then end the connection. */
  close: boolean
  /** The Authorization field's value, if any. */
  authorization: string | undefined
  /** The head was complete when PARTIAL was returned (the body is arriving). */
  headDone: boolean
}

export const GET = 0
export const HEAD = 1
export const POST = 2

/** More bytes are needed. */
export const PARTIAL = -1
/** Not a request this path answers: node:http takes the connection from here. */
export const HANDOFF = -2

/** Longest head this path waits for; a longer one goes to node:http, whose bound (and 431) apply. */
export const MAX_FAST_HEAD_BYTES = 16 << 10
/** Largest multi-get body this path takes: one that holds nothing against the request budget. */
export const MAX_FAST_BODY_BYTES = BUDGET_FREE_BYTES

export function newFastRequest(): FastRequest {
  return { method: GET, store: '', key: EMPTY, bodyStart: 0, close: false, authorization: undefined, headDone: false }
}

const EMPTY = Buffer.alloc(0)
const CRLFCRLF = Buffer.from('\r\n\r\n')
const PREFIXES = [Buffer.from('GET /stores/'), Buffer.from('HEAD /stores/'), Buffer.from('POST /stores/')]
const KEYS = Buffer.from('/keys/')
const MULTI_GET = Buffer.from('/multi-get')
const VERSION = Buffer.from(' HTTP/1.1\r\n')

/** tchar of RFC 9110 5.6.2, the characters of a field name. */
const TCHAR = new Uint8Array(256)
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TCHAR[c.charCodeAt(0)] = 1
/** Characters of a store name (swapper/disk/version-names.ts isSafeName). */
const STORE_CHAR = new Uint8Array(256)
for (const c of '.-_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ') STORE_CHAR[c.charCodeAt(0)] = 1
const HEX = new Int8Array(256).fill(-1)
for (const c of '0123456789abcdef') HEX[c.charCodeAt(0)] = HEX[c.toUpperCase().charCodeAt(0)] = Number.parseInt(c, 16)

/**
 * Parses the request at `at`: its end (the byte after its body), PARTIAL or HANDOFF. On
 * success `req` describes it.
 */
export function parseRequest(buf: Buffer, at: number, req: FastRequest): number {
  const headEnd = buf.indexOf(CRLFCRLF, at)
  if (headEnd < 0) {
    req.headDone = false
    if (buf.length - at > MAX_FAST_HEAD_BYTES) return HANDOFF
    // A request that can only be something else (or ends its lines with a bare LF, which
    // no blank CRLF line will ever end) is node:http's at once: its bounds and answers apply.
    return startsLikeRead(buf, at) && !hasBareLf(buf, at) ? PARTIAL : HANDOFF
  }
  let method = -1
  for (let m = 0; m < PREFIXES.length; m++) if (matches(buf, at, PREFIXES[m] as Buffer)) method = m
  if (method < 0) return HANDOFF
  req.method = method
  const storeStart = at + (PREFIXES[method] as Buffer).length
  let p = storeStart
  while (p < headEnd && STORE_CHAR[buf[p] as number] === 1) p++
  if (p === storeStart || p - storeStart > 128 || buf[p] !== 0x2f) return HANDOFF
  req.store = buf.toString('latin1', storeStart, p)
  if (method === POST) {
    if (!matches(buf, p, MULTI_GET)) return HANDOFF
    p += MULTI_GET.length
  } else {
    if (!matches(buf, p, KEYS)) return HANDOFF
    p += KEYS.length
    const keyStart = p
    let escaped = false
    while (p < headEnd) {
      const c = buf[p] as number
      if (c === 0x20) break
      // '?' and '#' (a query, a fragment) and anything not visible ASCII: node:http's call.
      if (c < 0x21 || c > 0x7e || c === 0x3f || c === 0x23) return HANDOFF
      if (c === 0x25) escaped = true
      p++
    }
    if (p === keyStart || p - keyStart > 3 * MAX_KEY_BYTES) return HANDOFF
    const key = escaped ? percentDecode(buf, keyStart, p) : buf.subarray(keyStart, p)
    if (key === undefined || key.length > MAX_KEY_BYTES) return HANDOFF
    req.key = key
  }
  if (!matches(buf, p, VERSION)) return HANDOFF
  const end = parseFields(buf, p + VERSION.length, headEnd + 2, req)
  if (end < 0) return HANDOFF
  req.headDone = true
  req.bodyStart = headEnd + 4
  if (method !== POST) return end === 0 ? req.bodyStart : HANDOFF
  if (end === 0 || end - 1 > MAX_FAST_BODY_BYTES) return HANDOFF
  const requestEnd = req.bodyStart + end - 1
  return requestEnd <= buf.length ? requestEnd : PARTIAL
}

/**
 * The header fields from `p` to `end` (the CRLF of the last one included): 1 + the
 * Content-Length, 0 without one, -1 for anything this path leaves to node:http.
 */
function parseFields(buf: Buffer, p: number, end: number, req: FastRequest): number {
  let hosts = 0
  let length = -1
  let connection = false
  req.close = false
  req.authorization = undefined
  while (p < end) {
    const nameStart = p
    while (TCHAR[buf[p] as number] === 1) p++
    // An empty name, a space before the colon, an obs-fold line: refused or fussy, not ours.
    if (p === nameStart || buf[p] !== 0x3a) return -1
    const nameEnd = p++
    while (buf[p] === 0x20 || buf[p] === 0x09) p++
    const valueStart = p
    for (;;) {
      const c = buf[p] as number
      if (c === 0x0d) break
      if ((c < 0x20 && c !== 0x09) || c === 0x7f) return -1
      p++
    }
    if (buf[p + 1] !== 0x0a) return -1
    let valueEnd = p
    while (valueEnd > valueStart && (buf[valueEnd - 1] === 0x20 || buf[valueEnd - 1] === 0x09)) valueEnd--
    p += 2
    switch (nameEnd - nameStart) {
      case 4:
        if (named(buf, nameStart, 'host')) hosts++
        break
      case 6:
        if (named(buf, nameStart, 'expect')) return -1
        break
      case 7:
        if (named(buf, nameStart, 'upgrade')) return -1
        break
      case 10:
        if (named(buf, nameStart, 'connection')) {
          if (connection) return -1
          connection = true
          const close = connectionClose(buf.toString('latin1', valueStart, valueEnd))
          if (close === undefined) return -1
          req.close = close
        }
        break
      case 13:
        if (named(buf, nameStart, 'authorization')) {
          if (req.authorization !== undefined) return -1
          req.authorization = buf.toString('latin1', valueStart, valueEnd)
        }
        break
      case 14:
        if (named(buf, nameStart, 'content-length')) {
          if (length >= 0 || valueEnd === valueStart || valueEnd - valueStart > 7) return -1
          length = 0
          for (let i = valueStart; i < valueEnd; i++) {
            const d = (buf[i] as number) - 0x30
            if (d < 0 || d > 9) return -1
            length = length * 10 + d
          }
        }
        break
      case 17:
        if (named(buf, nameStart, 'transfer-encoding')) return -1
        break
    }
  }
  if (hosts !== 1) return -1
  return length + 1
}

/** `Connection: close` (true), `keep-alive` (false); undefined for any other option. */
function connectionClose(value: string): boolean | undefined {
  let close = false
  for (const option of value.split(',')) {
    const o = option.trim().toLowerCase()
    if (o === 'close') close = true
    else if (o !== 'keep-alive') return undefined
  }
  return close
}

/** `%XX` to one byte each; undefined for a broken escape. */
function percentDecode(buf: Buffer, start: number, end: number): Buffer | undefined {
  const out = Buffer.allocUnsafe(end - start)
  let n = 0
  for (let i = start; i < end; i++) {
    const c = buf[i] as number
    if (c !== 0x25) {
      out[n++] = c
      continue
    }
    const hi = HEX[buf[i + 1] ?? 0] as number
    const lo = HEX[buf[i + 2] ?? 0] as number
    if (i + 2 >= end || hi < 0 || lo < 0) return undefined
    out[n++] = (hi << 4) | lo
    i += 2
  }
  return out.subarray(0, n)
}

/** Whether the bytes so far can still become a request this path answers. */
function startsLikeRead(buf: Buffer, at: number): boolean {
  const n = buf.length - at
  return PREFIXES.some((p) => matches(buf.subarray(at, at + Math.min(n, p.length)), 0, p.subarray(0, Math.min(n, p.length))))
}

function hasBareLf(buf: Buffer, at: number): boolean {
  for (let i = buf.indexOf(0x0a, at); i >= 0; i = buf.indexOf(0x0a, i + 1)) if (i === at || buf[i - 1] !== 0x0d) return true
  return false
}

function matches(buf: Buffer, at: number, what: Buffer): boolean {
  if (at + what.length > buf.length) return false
  for (let i = 0; i < what.length; i++) if (buf[at + i] !== what[i]) return false
  return true
}

/** Whether the field name at `at` is `lower` (ASCII, any case; the length was checked). */
function named(buf: Buffer, at: number, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) if (((buf[at + i] as number) | 0x20) !== lower.charCodeAt(i)) return false
  return true
}
