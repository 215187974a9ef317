import type { GrowableBuffer } from '../../common/growable-buffer'

/**
 * Responses of the fast read path, written as bytes into a connection's output: the same
 * status lines and header fields, in the same order, as node:http writes for today's read
 * routes (routes/reads.ts), so a client cannot tell which path answered.
 */

let dateSecond = -1
let dateText = ''

/** The Date field's value, formatted once a second (node:http caches it the same way). */
function httpDate(): string {
  const now = Date.now()
  const second = Math.floor(now / 1000)
  if (second !== dateSecond) {
    dateSecond = second
    dateText = new Date(second * 1000).toUTCString()
  }
  return dateText
}

/** `Connection` and `Keep-Alive` as node:http writes them, then the blank line. */
function tail(close: boolean, keepAliveS: number): string {
  return close
    ? `Date: ${httpDate()}\r\nConnection: close\r\n\r\n`
    : `Date: ${httpDate()}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=${keepAliveS}\r\n\r\n`
}

function writeAscii(out: GrowableBuffer, text: string): void {
  out.reserve(text.length)
  out.pos += out.buf.write(text, out.pos, 'latin1')
}

export function writeBytes(out: GrowableBuffer, bytes: Uint8Array): void {
  out.reserve(bytes.length)
  out.buf.set(bytes, out.pos)
  out.pos += bytes.length
}

/** A value found (GET, or HEAD without its body). */
export function writeValue(
  out: GrowableBuffer,
  version: number,
  value: Uint8Array,
  head: boolean,
  close: boolean,
  keepAliveS: number,
): void {
  writeAscii(
    out,
    `HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: ${value.length}\r\nX-Rostore-Version: ${version}\r\n${tail(close, keepAliveS)}`,
  )
  if (!head) writeBytes(out, value)
}

/** A key absent from the live version. */
export function writeAbsent(out: GrowableBuffer, version: number, close: boolean, keepAliveS: number): void {
  writeAscii(
    out,
    `HTTP/1.1 404 Not Found\r\nX-Rostore-Version: ${version}\r\nContent-Length: 0\r\nCache-Control: no-store\r\n${tail(close, keepAliveS)}`,
  )
}

/** The head of a multi-get answer whose `bodyBytes` of framed values follow. */
export function writeMultiGetHead(
  out: GrowableBuffer,
  version: number,
  keys: number,
  bodyBytes: number,
  close: boolean,
  keepAliveS: number,
): void {
  writeAscii(
    out,
    `HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nX-Rostore-Version: ${version}\r\nX-Rostore-Keys: ${keys}\r\nCache-Control: no-store\r\nContent-Length: ${bodyBytes}\r\n${tail(close, keepAliveS)}`,
  )
}

/** What node:http answers a request whose head or body did not arrive in time. */
export const REQUEST_TIMEOUT = Buffer.from('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
