import { encodeKeys, encodeValues } from '../../../formats/wire/multiget'
import { headerOf, rawExchange, RawHttpConnection } from '../../../testkit/net/raw-http'
import {
  BIG_STORE,
  big,
  expectValue,
  get,
  keyPath,
  MIB,
  multiGet,
  READ_PATHS,
  stable,
  STORE,
  useConformanceNode,
  VALUES,
} from './http-conformance-fixture'

/**
 * HTTP/1.1 conformance of the read path, byte for byte over raw sockets: pipelining,
 * request body framings, Expect: 100-continue, HEAD, percent-encoded keys, keep-alive and
 * HTTP/1.0. Limits and slow clients are in http-conformance-limits.test.ts. Every entry of
 * READ_PATHS runs the same cases.
 */

jest.setTimeout(60_000)

describe.each(READ_PATHS)('HTTP conformance: $name', (path) => {
  const ctx = useConformanceNode(path)

  test('pipelined GETs in one write are answered in order on one connection', async () => {
    const c = await RawHttpConnection.open(ctx.node.port)
    const keys = ['k3', 'k1', 'missing', 'k2', 'k1']
    c.write(keys.map((k) => get(keyPath(k))).join(''))
    for (const k of keys) {
      const r = await c.read()
      if (k === 'missing') expect({ status: r.status, body: r.body.length }).toEqual({ status: 404, body: 0 })
      else expectValue(r, VALUES[k] as string)
      expect(headerOf(r, 'connection')).toBe('keep-alive')
    }
    expect(c.unread().length).toBe(0)
    expect(c.isEnded).toBe(false)
    c.destroy()
  })

  test('pipelined GET, multi-get, GET in one write: three answers in order', async () => {
    const c = await RawHttpConnection.open(ctx.node.port)
    const body = encodeKeys(['k2', 'nope', 'a/b'])
    c.write(Buffer.concat([Buffer.from(get(keyPath('k1'))), multiGet(body), Buffer.from(get(keyPath('k3')))]))
    expectValue(await c.read(), VALUES['k1'] as string)
    const m = await c.read()
    expect(m.status).toBe(200)
    expect(headerOf(m, 'x-rostore-keys')).toBe('3')
    expect(m.body).toEqual(encodeValues([Buffer.from('value-two'), undefined, Buffer.from('slash')]))
    expectValue(await c.read(), VALUES['k3'] as string)
    expect(c.unread().length).toBe(0)
    c.destroy()
  })

  test('a malformed request pipelined after valid ones is answered 400 after their answers, then the connection closes', async () => {
    // The multi-get of 3 MiB goes out window by window, so the parse error comes while it is in flight.
    const body = encodeKeys(['big', 'big', 'big'])
    const c = await RawHttpConnection.open(ctx.node.port)
    c.write(
      Buffer.concat([
        Buffer.from(`POST /stores/${BIG_STORE}/multi-get HTTP/1.1\r\nHost: node\r\nContent-Length: ${body.length}\r\n\r\n`),
        body,
        Buffer.from(get(keyPath('k1'))),
        Buffer.from('NOT HTTP AT ALL\r\n\r\n'),
      ]),
    )
    const m = await c.read()
    expect(m.status).toBe(200)
    // Buffer.equals: jest's deep equality walks a 3 MiB buffer byte by byte, for seconds.
    expect(m.body.length).toBe(3 * (4 + MIB))
    expect(m.body.equals(encodeValues([big, big, big]))).toBe(true)
    expectValue(await c.read(), VALUES['k1'] as string)
    const bad = await c.read()
    expect(bad.raw.toString('latin1')).toBe('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
    await c.waitClosed()
    expect(c.unread().length).toBe(0)
  })

  test('multi-get: a chunked body (several chunks, extensions, a trailer) gets the answer a Content-Length body gets', async () => {
    const body = encodeKeys(['k1', 'absent', '€uro', 'k2', '100%'])
    const expected = encodeValues([
      Buffer.from('value-one'),
      undefined,
      Buffer.from('euro-sign'),
      Buffer.from('value-two'),
      Buffer.from('percent'),
    ])
    const plain = await rawExchange(ctx.node.port, multiGet(body))
    expect(plain.status).toBe(200)
    expect(plain.body).toEqual(expected)
    // Chunks cut inside a length prefix and inside a key, with extensions and a trailer.
    const cuts = [0, 2, 7, 8, 20, body.length]
    const chunks = cuts.slice(1).map((end, i) => body.subarray(cuts[i], end))
    const framed = Buffer.concat([
      Buffer.from(`POST /stores/${STORE}/multi-get HTTP/1.1\r\nHost: node\r\nTransfer-Encoding: chunked\r\n\r\n`),
      ...chunks.flatMap((chunk, i) => [
        Buffer.from(`${chunk.length.toString(16)}${i % 2 === 0 ? ';ext=1' : ';name="quoted";x'}\r\n`),
        chunk,
        Buffer.from('\r\n'),
      ]),
      Buffer.from('0\r\nX-Trailer: done\r\n\r\n'),
    ])
    const c = await RawHttpConnection.open(ctx.node.port)
    c.write(Buffer.concat([framed, Buffer.from(get(keyPath('k3')))]))
    const chunked = await c.read()
    expect({ status: chunked.status, headers: stable(chunked) }).toEqual({ status: plain.status, headers: stable(plain) })
    expect(chunked.body).toEqual(expected)
    // The connection goes on after a chunked request: the pipelined GET is answered.
    expectValue(await c.read(), VALUES['k3'] as string)
    c.destroy()
  })

  test('multi-get: Content-Length and Transfer-Encoding together are refused with 400 and the connection closed', async () => {
    // RFC 9112 6.3: such a message may be a smuggling attempt; answering and closing is required.
    const body = encodeKeys(['k1'])
    const c = await RawHttpConnection.open(ctx.node.port)
    c.write(
      Buffer.concat([
        Buffer.from(
          `POST /stores/${STORE}/multi-get HTTP/1.1\r\nHost: node\r\nContent-Length: ${body.length + 5}\r\nTransfer-Encoding: chunked\r\n\r\n`,
        ),
        Buffer.from(`${body.length.toString(16)}\r\n`),
        body,
        Buffer.from('\r\n0\r\n\r\n'),
      ]),
    )
    const r = await c.read()
    expect({ status: r.status, connection: headerOf(r, 'connection') }).toEqual({ status: 400, connection: 'close' })
    await c.waitClosed()
    await ctx.expectHealthy()
  })

  test('multi-get: a broken chunk size is answered 400 at once, after the answer pipelined before it', async () => {
    // The request in error is still receiving its body: its 400 waits for nothing but the GET before it.
    const c = await RawHttpConnection.open(ctx.node.port)
    c.write(get(keyPath('k2')) + `POST /stores/${STORE}/multi-get HTTP/1.1\r\nHost: node\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n`)
    expectValue(await c.read(), VALUES['k2'] as string)
    const r = await c.read()
    expect(r.raw.toString('latin1')).toBe('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
    await c.waitClosed()
  })

  test('Expect: 100-continue on a multi-get: 100 Continue, then the answer', async () => {
    const body = encodeKeys(['k2', 'k1'])
    const c = await RawHttpConnection.open(ctx.node.port)
    c.write(`POST /stores/${STORE}/multi-get HTTP/1.1\r\nHost: node\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`)
    const interim = await c.read()
    expect(interim.raw.toString('latin1')).toBe('HTTP/1.1 100 Continue\r\n\r\n')
    c.write(body)
    const r = await c.read()
    expect(r.status).toBe(200)
    expect(r.body).toEqual(encodeValues([Buffer.from('value-two'), Buffer.from('value-one')]))
    // Nothing else was sent (no second interim response), and the connection is kept.
    expect(c.unread().length).toBe(0)
    c.write(get(keyPath('k3')))
    expectValue(await c.read(), VALUES['k3'] as string)
    c.destroy()
  })

  test('an expectation other than 100-continue: 417, the request is not run', async () => {
    const r = await rawExchange(ctx.node.port, get(keyPath('k1'), 'Expect: something-else\r\n'))
    expect({ status: r.status, body: r.body.length }).toEqual({ status: 417, body: 0 })
  })

  test('HEAD of a key: the headers of GET with no body, and the next pipelined request is answered', async () => {
    const c = await RawHttpConnection.open(ctx.node.port)
    const headOf = (key: string): string => `HEAD ${keyPath(key)} HTTP/1.1\r\nHost: node\r\n\r\n`
    c.write(headOf('k2') + get(keyPath('k2')) + headOf('missing') + get(keyPath('k1')))
    const head = await c.read({ head: true })
    const full = await c.read()
    expect(head.status).toBe(200)
    expect(stable(head)).toEqual(stable(full))
    expect(headerOf(head, 'content-length')).toBe(String('value-two'.length))
    expect(head.body.length).toBe(0)
    expectValue(full, 'value-two')
    const absent = await c.read({ head: true })
    expect({ status: absent.status, length: headerOf(absent, 'content-length') }).toEqual({ status: 404, length: '0' })
    // Had HEAD sent a body, the next read would find it where a status line must be, and throw.
    expectValue(await c.read(), VALUES['k1'] as string)
    c.destroy()
  })

  test('percent-encoded keys read the right values', async () => {
    const cases: [string, string][] = [
      ['a%2Fb', 'slash'],
      ['a%2fb', 'slash'],
      ['a/b', 'slash'],
      ['a%20b', 'space'],
      ['%E2%82%ACuro', 'euro-sign'],
      ['%e2%82%acuro', 'euro-sign'],
      ['100%25', 'percent'],
      ['a+b', 'plus'],
      ['a%2Bb', 'plus'],
      ['%6B%31', 'value-one'],
    ]
    const c = await RawHttpConnection.open(ctx.node.port)
    c.write(cases.map(([k]) => get(keyPath(k))).join(''))
    for (const [key, value] of cases) {
      const r = await c.read()
      expect({ key, status: r.status, body: r.body.toString('utf8') }).toEqual({ key, status: 200, body: value })
    }
    c.destroy()
  })

  test('malformed escapes: 400 RO_BAD_REQUEST and the connection stays usable', async () => {
    const c = await RawHttpConnection.open(ctx.node.port)
    for (const bad of ['%zz', 'k%2', 'k%', '%G1', '100%']) {
      c.write(get(keyPath(bad)) + get(keyPath('k1')))
      const r = await c.read()
      expect({ bad, status: r.status, connection: headerOf(r, 'connection') }).toEqual({ bad, status: 400, connection: 'keep-alive' })
      expect(JSON.parse(r.body.toString('utf8'))).toMatchObject({ error: { code: 'RO_BAD_REQUEST' } })
      expectValue(await c.read(), VALUES['k1'] as string)
    }
    expect(c.isEnded).toBe(false)
    c.destroy()
  })

  test('a raw (not percent-encoded) UTF-8 byte in the request target: 400 from the parser, connection closed', async () => {
    // RFC 3986 allows only ASCII in a URI; node's parser refuses the request line itself.
    const c = await RawHttpConnection.open(ctx.node.port)
    c.write(Buffer.concat([Buffer.from(`GET /stores/${STORE}/keys/`), Buffer.from('€uro'), Buffer.from(' HTTP/1.1\r\nHost: node\r\n\r\n')]))
    const r = await c.read()
    expect(r.raw.toString('latin1')).toBe('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
    await c.waitClosed()
    await ctx.expectHealthy()
  })

  test('Connection: close is honoured: the answer says so and the connection is closed after it', async () => {
    const c = await RawHttpConnection.open(ctx.node.port)
    c.write(get(keyPath('k1'), 'Connection: close\r\n') + get(keyPath('k2')))
    const r = await c.read()
    expectValue(r, VALUES['k1'] as string)
    expect(headerOf(r, 'connection')).toBe('close')
    await c.waitClosed()
    // The request pipelined after it is not answered.
    expect(c.unread().length).toBe(0)
  })

  test('a multi-get with Connection: close and a request pipelined after it: the answer, then the end of the connection', async () => {
    // RFC 9112 9.6: nothing after a close request is processed; the client retries it elsewhere.
    const body = encodeKeys(['k1', 'k2'])
    const c = await RawHttpConnection.open(ctx.node.port)
    c.write(Buffer.concat([multiGet(body, 'Connection: close\r\n'), Buffer.from(get(keyPath('k3')))]))
    const r = await c.read()
    expect({ status: r.status, connection: headerOf(r, 'connection') }).toEqual({ status: 200, connection: 'close' })
    expect(r.body).toEqual(encodeValues([Buffer.from('value-one'), Buffer.from('value-two')]))
    await c.waitClosed()
    expect(c.unread().length).toBe(0)
  })

  test('HTTP/1.0 without keep-alive: answered, then closed; with keep-alive: kept', async () => {
    const c = await RawHttpConnection.open(ctx.node.port)
    c.write(`GET ${keyPath('k1')} HTTP/1.0\r\n\r\n`)
    const r = await c.read()
    // A server answers with its own version (RFC 9110 2.5): HTTP/1.1 to a 1.0 request.
    expect(r.version).toBe('HTTP/1.1')
    expectValue(r, VALUES['k1'] as string)
    expect(headerOf(r, 'connection')).toBe('close')
    await c.waitClosed()
    expect(c.unread().length).toBe(0)

    const k = await RawHttpConnection.open(ctx.node.port)
    k.write(`GET ${keyPath('k2')} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n`)
    const first = await k.read()
    expectValue(first, VALUES['k2'] as string)
    expect(headerOf(first, 'connection')).toBe('keep-alive')
    k.write(`GET ${keyPath('k3')} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n`)
    expectValue(await k.read(), VALUES['k3'] as string)
    k.destroy()
  })
})
