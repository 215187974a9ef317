import { encodeKeys } from '../../../formats/wire/multiget'
import {
  GET,
  HANDOFF,
  HEAD,
  MAX_FAST_BODY_BYTES,
  MAX_FAST_HEAD_BYTES,
  newFastRequest,
  PARTIAL,
  parseRequest,
  POST,
} from '../../../server/http/fast-request'

/**
 * The fast read path's request parser: the one request shape it takes, and HANDOFF (to
 * node:http, which then answers as it always has) for everything else, above all for the
 * requests two parsers could frame differently (smuggling).
 */

const get = (target: string, fields = 'Host: n\r\n'): Buffer => Buffer.from(`GET ${target} HTTP/1.1\r\n${fields}\r\n`)
const post = (body: Buffer, fields = ''): Buffer =>
  Buffer.concat([Buffer.from(`POST /stores/s/multi-get HTTP/1.1\r\nHost: n\r\nContent-Length: ${body.length}\r\n${fields}\r\n`), body])

function parse(bytes: Buffer | string, at = 0): { end: number; req: ReturnType<typeof newFastRequest> } {
  const req = newFastRequest()
  const buf = typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes
  return { end: parseRequest(buf, at, req), req }
}

describe('fast read path: request parser', () => {
  test('a GET of a key: its end, store and key; HEAD the same', () => {
    const bytes = get('/stores/my.store_1-x/keys/k1', 'Host: n\r\nAccept: */*\r\n')
    const { end, req } = parse(bytes)
    expect({ end, method: req.method, store: req.store, key: req.key.toString(), close: req.close }).toEqual({
      end: bytes.length,
      method: GET,
      store: 'my.store_1-x',
      key: 'k1',
      close: false,
    })
    expect(parse(Buffer.from(bytes.toString().replace('GET', 'HEAD'))).req.method).toBe(HEAD)
  })

  test('percent-escapes are decoded to bytes; / and + are themselves', () => {
    const key = (target: string): string => parse(get(`/stores/s/keys/${target}`)).req.key.toString('latin1')
    expect(key('a%2Fb')).toBe('a/b')
    expect(key('a/b')).toBe('a/b')
    expect(key('a+b')).toBe('a+b')
    expect(key('%e2%82%ACuro')).toBe(Buffer.from('€uro').toString('latin1'))
    expect(key('100%25')).toBe('100%')
  })

  test('a multi-get with a Content-Length body; Connection: close and the Authorization value are seen', () => {
    const body = encodeKeys(['a', 'b'])
    const bytes = post(body, 'Connection: Close\r\nAuthorization: Bearer t0k\r\n')
    const { end, req } = parse(bytes)
    expect({ end, method: req.method, body: bytes.subarray(req.bodyStart, end), close: req.close, auth: req.authorization }).toEqual({
      end: bytes.length,
      method: POST,
      body,
      close: true,
      auth: 'Bearer t0k',
    })
  })

  test('pipelined requests: each parsed from where the last ended', () => {
    const a = get('/stores/s/keys/a')
    const b = post(encodeKeys(['x']))
    const c = get('/stores/s/keys/c')
    const all = Buffer.concat([a, b, c])
    const req = newFastRequest()
    const ends: number[] = []
    for (let at = 0; at < all.length; at = ends[ends.length - 1] as number) ends.push(parseRequest(all, at, req))
    expect(ends).toEqual([a.length, a.length + b.length, all.length])
    expect(req.key.toString()).toBe('c')
  })

  test('split at every byte: PARTIAL until the request is whole, then the same answer', () => {
    for (const whole of [get('/stores/s/keys/a%20b', 'Host: n\r\nConnection: keep-alive\r\n'), post(encodeKeys(['k1', 'k2']))]) {
      const full = parse(whole)
      expect(full.end).toBe(whole.length)
      for (let n = 1; n < whole.length; n++) expect({ n, end: parse(whole.subarray(0, n)).end }).toEqual({ n, end: PARTIAL })
    }
  })

  test.each([
    ['another method', 'PUT /stores/s/keys/k HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['a lower-case method', 'get /stores/s/keys/k HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['another route', 'GET /stores/s HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['an admin route', 'GET /admin/stores HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['an absolute-form target', 'GET http://n/stores/s/keys/k HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['a query', 'GET /stores/s/keys/k?x=1 HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['a fragment', 'GET /stores/s/keys/k#x HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['an escaped store name', 'GET /stores/%2e%2e/keys/k HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['an empty key', 'GET /stores/s/keys/ HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['a broken escape', 'GET /stores/s/keys/k%2 HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['a bad hex digit', 'GET /stores/s/keys/%G1 HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['a raw non-ASCII byte', 'GET /stores/s/keys/\xe2\x82\xac HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['a tab in the target', 'GET /stores/s/keys/a\tb HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['HTTP/1.0', 'GET /stores/s/keys/k HTTP/1.0\r\nHost: n\r\n\r\n'],
    ['HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
    ['no Host', 'GET /stores/s/keys/k HTTP/1.1\r\nAccept: */*\r\n\r\n'],
    ['two Hosts', 'GET /stores/s/keys/k HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'],
    [
      'Content-Length and Transfer-Encoding',
      'POST /stores/s/multi-get HTTP/1.1\r\nHost: n\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    ['Transfer-Encoding alone', 'POST /stores/s/multi-get HTTP/1.1\r\nHost: n\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['two Content-Lengths', 'POST /stores/s/multi-get HTTP/1.1\r\nHost: n\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n'],
    ['a signed Content-Length', 'POST /stores/s/multi-get HTTP/1.1\r\nHost: n\r\nContent-Length: +0\r\n\r\n'],
    ['a Content-Length list', 'POST /stores/s/multi-get HTTP/1.1\r\nHost: n\r\nContent-Length: 0, 0\r\n\r\n'],
    ['no Content-Length on a multi-get', 'POST /stores/s/multi-get HTTP/1.1\r\nHost: n\r\n\r\n'],
    ['a body on a GET', 'GET /stores/s/keys/k HTTP/1.1\r\nHost: n\r\nContent-Length: 0\r\n\r\n'],
    ['Expect', 'POST /stores/s/multi-get HTTP/1.1\r\nHost: n\r\nContent-Length: 0\r\nExpect: 100-continue\r\n\r\n'],
    ['Upgrade', 'GET /stores/s/keys/k HTTP/1.1\r\nHost: n\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n'],
    ['an unknown Connection option', 'GET /stores/s/keys/k HTTP/1.1\r\nHost: n\r\nConnection: keep-alive, x\r\n\r\n'],
    ['two Authorization fields', 'GET /stores/s/keys/k HTTP/1.1\r\nHost: n\r\nAuthorization: a\r\nAuthorization: b\r\n\r\n'],
    ['a space before the colon', 'GET /stores/s/keys/k HTTP/1.1\r\nHost : n\r\n\r\n'],
    ['a folded field', 'GET /stores/s/keys/k HTTP/1.1\r\nHost: n\r\nX-A: a\r\n b\r\n\r\n'],
    ['a bare LF inside a field', 'GET /stores/s/keys/k HTTP/1.1\r\nHost: n\r\nX-A: a\nb\r\n\r\n'],
    ['a NUL in a value', 'GET /stores/s/keys/k HTTP/1.1\r\nHost: n\r\nX-A: a\x00b\r\n\r\n'],
    ['a name with a separator', 'GET /stores/s/keys/k HTTP/1.1\r\nHost: n\r\nX(A): a\r\n\r\n'],
  ])('%s: HANDOFF', (_what, request) => {
    expect(parse(request).end).toBe(HANDOFF)
  })

  test('Transfer-Encoding in any case, also after the request looked whole to a Content-Length reader: HANDOFF', () => {
    const r = 'POST /stores/s/multi-get HTTP/1.1\r\nHost: n\r\ntRaNsFeR-eNcOdInG: chunked\r\nContent-Length: 4\r\n\r\n'
    expect(parse(r + '\x00\x00\x00\x00').end).toBe(HANDOFF)
  })

  test('a head longer than the fast bound, and a start that can only be another request: HANDOFF before it is whole', () => {
    expect(parse(`GET /stores/s/keys/k HTTP/1.1\r\nX: ${'a'.repeat(MAX_FAST_HEAD_BYTES)}`).end).toBe(HANDOFF)
    expect(parse('GET /stores/s/keys/k HTTP/1.1\r\nX: aaa').end).toBe(PARTIAL)
    expect(parse('GET /stat').end).toBe(HANDOFF)
    expect(parse('DELETE').end).toBe(HANDOFF)
    expect(parse('HEA').end).toBe(PARTIAL)
    // Lines ended by a bare LF never make a CRLF blank line: node:http answers them.
    expect(parse('GET /stores/s/keys/k HTTP/1.1\nHost: n\n\n').end).toBe(HANDOFF)
  })

  test('a multi-get body over 64 KiB: HANDOFF (node:http charges it to the request budget)', () => {
    const head = `POST /stores/s/multi-get HTTP/1.1\r\nHost: n\r\nContent-Length: ${MAX_FAST_BODY_BYTES + 1}\r\n\r\n`
    expect(parse(head).end).toBe(HANDOFF)
    const atBound = `POST /stores/s/multi-get HTTP/1.1\r\nHost: n\r\nContent-Length: ${MAX_FAST_BODY_BYTES}\r\n\r\n`
    const { end, req } = parse(atBound)
    expect({ end, headDone: req.headDone }).toEqual({ end: PARTIAL, headDone: true })
  })

  test('a key longer than 64 KiB once decoded: HANDOFF (node:http answers 414)', () => {
    expect(parse(get(`/stores/s/keys/${'k'.repeat(65536)}`)).end).toBe(HANDOFF)
  })
})
