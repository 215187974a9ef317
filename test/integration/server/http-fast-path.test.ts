import { join } from 'node:path'
import { StoreClient } from '../../../client/store-client'
import { loadCluster } from '../../../cluster/cluster'
import { nativeFunctions } from '../../../common/native'
import { encodeKeys, encodeValues } from '../../../formats/wire/multiget'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { json, startSingleNode, type NodeProcess } from '../../../testkit/cluster/node-process'
import { evictTree } from '../../../testkit/stores/page-cache'
import { headerOf, rawExchange, RawHttpConnection } from '../../../testkit/net/raw-http'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * What only the fast HTTP read path has (`--http-read-path fast`): it answers the reads
 * itself (counted in rostore_http_fast_reads_total), hands a connection to node:http at the
 * first request it does not take, with the answers before it in order, and survives the
 * requests meant to make two parsers disagree. The behaviour both paths share is in the
 * conformance suites (http-conformance*.test.ts).
 */

jest.setTimeout(60_000)

const STORE = 'fast'
const READ_TOKEN = 'fast-path-read-token-7c1e'
const get = (key: string, extra = ''): string => `GET /stores/${STORE}/keys/${key} HTTP/1.1\r\nHost: n\r\n${extra}\r\n`
const multiGet = (keys: string[], extra = ''): Buffer => {
  const body = encodeKeys(keys)
  return Buffer.concat([
    Buffer.from(`POST /stores/${STORE}/multi-get HTTP/1.1\r\nHost: n\r\nContent-Length: ${body.length}\r\n${extra}\r\n`),
    body,
  ])
}
const auth = `Authorization: Bearer ${READ_TOKEN}\r\n`

/** rostore_http_fast_reads_total by result; the /metrics request itself is handed off. */
async function counts(port: number): Promise<{ answered: number; handedOff: number }> {
  const r = await rawExchange(port, `GET /metrics HTTP/1.1\r\nHost: n\r\n${auth}\r\n`)
  const text = r.body.toString('utf8')
  const of = (result: string): number =>
    Number(new RegExp(`^rostore_http_fast_reads_total\\{result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0)
  return { answered: of('answered'), handedOff: of('handed_off') }
}

describe('HTTP fast read path', () => {
  const tmp = makeTmp('rostore-http-fast-')
  let node: NodeProcess

  beforeAll(async () => {
    const src = join(tmp.dir, 'src')
    await makeNodeDir(
      src,
      [
        ['k1', 'one'],
        ['k2', 'two'],
        ['a b', 'space'],
      ],
      { store: STORE },
    )
    node = await startSingleNode({
      dir: tmp.dir,
      token: 'fast-admin-token-2b7d91',
      extraArgs: ['--http-read-path', 'fast', '--read-token', READ_TOKEN],
    })
    await node.install(STORE, src, { swap: true })
  })
  afterAll(async () => {
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })

  test('pipelined GETs and multi-gets are answered by the fast path, in order, on one connection', async () => {
    const before = await counts(node.port)
    const c = await RawHttpConnection.open(node.port)
    c.write(
      Buffer.concat([
        Buffer.from(get('k1', auth) + get('nope', auth)),
        multiGet(['k2', 'x', 'a b'], auth),
        Buffer.from(get('a%20b', auth)),
      ]),
    )
    const answers = [await c.read(), await c.read(), await c.read(), await c.read()]
    expect(answers.map((r) => r.status)).toEqual([200, 404, 200, 200])
    expect(answers[0]?.body.toString()).toBe('one')
    expect(answers[2]?.body).toEqual(encodeValues([Buffer.from('two'), undefined, Buffer.from('space')]))
    expect(answers[3]?.body.toString()).toBe('space')
    c.destroy()
    const after = await counts(node.port)
    expect({ answered: after.answered - before.answered, handedOff: after.handedOff - before.handedOff }).toEqual({
      answered: 4,
      handedOff: 1,
    })
  })

  test('no read token, a wrong one: node:http answers 401, after the fast answers before it', async () => {
    const c = await RawHttpConnection.open(node.port)
    c.write(get('k1', auth) + get('k1') + get('k2', auth))
    expect((await c.read()).status).toBe(200)
    const refused = await c.read()
    expect({ status: refused.status, auth: headerOf(refused, 'www-authenticate') }).toEqual({
      status: 401,
      auth: 'Bearer realm="rostore-read"',
    })
    // The connection is node:http's now, and still serves.
    expect((await c.read()).body.toString()).toBe('two')
    c.write(get('k1', 'Authorization: Bearer wrong\r\n'))
    expect((await c.read()).status).toBe(401)
    c.destroy()
  })

  test('a status request between reads: three answers in order, the last from node:http', async () => {
    const c = await RawHttpConnection.open(node.port)
    c.write(get('k1', auth) + `GET /stores/${STORE} HTTP/1.1\r\nHost: n\r\n${auth}\r\n` + get('k2', auth))
    expect((await c.read()).body.toString()).toBe('one')
    const meta = await c.read()
    expect({ status: meta.status, store: (JSON.parse(meta.body.toString()) as { store: string }).store }).toEqual({
      status: 200,
      store: STORE,
    })
    expect((await c.read()).body.toString()).toBe('two')
    c.destroy()
  })

  test('smuggling: Content-Length with Transfer-Encoding after a fast answer is refused by node:http, and nothing hidden in its body runs', async () => {
    const hidden = get('k2', auth)
    const c = await RawHttpConnection.open(node.port)
    c.write(
      get('k1', auth) +
        `POST /stores/${STORE}/multi-get HTTP/1.1\r\nHost: n\r\n${auth}Content-Length: ${hidden.length + 5}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${hidden}`,
    )
    expect((await c.read()).body.toString()).toBe('one')
    const refused = await c.read()
    expect({ status: refused.status, connection: headerOf(refused, 'connection') }).toEqual({ status: 400, connection: 'close' })
    await c.waitClosed()
    expect(c.unread().length).toBe(0)
  })

  test('smuggling: two Content-Lengths, and a store named ".." (raw or escaped): node:http answers 400', async () => {
    const twice = await rawExchange(
      node.port,
      Buffer.concat([
        Buffer.from(`POST /stores/${STORE}/multi-get HTTP/1.1\r\nHost: n\r\n${auth}Content-Length: 7\r\nContent-Length: 7\r\n\r\n`),
        encodeKeys(['k1']),
      ]),
    )
    expect(twice.status).toBe(400)
    for (const store of ['..', '%2e%2e', '.']) {
      const r = await rawExchange(node.port, `GET /stores/${store}/keys/k1 HTTP/1.1\r\nHost: n\r\n${auth}\r\n`)
      expect({ store, status: r.status === 400 || r.status === 404 || r.status === 421 }).toEqual({ store, status: true })
      expect(r.body.toString()).not.toContain(tmp.dir)
    }
  })

  test('requests sent one byte per write are answered as when sent whole', async () => {
    const bytes = Buffer.concat([Buffer.from(get('k1', auth)), multiGet(['k2', 'k1'], auth), Buffer.from(get('a%20b', auth))])
    const c = await RawHttpConnection.open(node.port)
    for (let i = 0; i < bytes.length; i++) await new Promise<void>((resolve) => c.socket.write(bytes.subarray(i, i + 1), () => resolve()))
    expect((await c.read()).body.toString()).toBe('one')
    expect((await c.read()).body).toEqual(encodeValues([Buffer.from('two'), Buffer.from('one')]))
    expect((await c.read()).body.toString()).toBe('space')
    c.destroy()
  })
  test('the routing client on a node without a RESP port reads over HTTP by default (here the fast path)', async () => {
    // The node listens where it chose (port 0 in its file).
    const file = await loadCluster(node.opts.clusterFile)
    const cluster = { ...file, nodes: file.nodes.map((n) => ({ ...n, port: node.port })) }
    const before = await counts(node.port)
    const client = await StoreClient.connect({ cluster, store: STORE, readToken: READ_TOKEN })
    try {
      expect(client.transport).toBe('http')
      expect((await client.get('k1'))?.toString()).toBe('one')
      expect((await client.getMany(['k2', 'absent', 'a b'])).map((v) => v?.toString())).toEqual(['two', undefined, 'space'])
    } finally {
      client.close()
    }
    const after = await counts(node.port)
    expect(after.answered - before.answered).toBe(2)
  })

  test('a client that half-closes after its requests gets every answer, then the end of the connection', async () => {
    const c = await RawHttpConnection.open(node.port)
    c.write(get('k1', auth) + get('k2', auth))
    c.socket.end()
    expect((await c.read()).body.toString()).toBe('one')
    expect((await c.read()).body.toString()).toBe('two')
    // Well before the keep-alive timeout (5 s), which would close it otherwise.
    await c.waitClosed(3000)
    expect(c.unread().length).toBe(0)
  })

  // Last: it stops the node.
  test('SIGTERM: an idle fast connection is closed and the node exits drained (0) well before its drain timeout', async () => {
    const idle = await RawHttpConnection.open(node.port)
    idle.write(get('k1', auth))
    expect((await idle.read()).body.toString()).toBe('one')
    const exit = await node.sigterm()
    expect(exit.code).toBe(0)
    await idle.waitClosed()
  })
})

const describeNative = nativeFunctions() ? describe : describe.skip

describeNative('HTTP fast read path, cold records (data evicted before the node started)', () => {
  const tmp = makeTmp('rostore-http-fast-cold-')
  const N = 3000
  const valueOf = (i: number): string => `v-${i}|${'c'.repeat(900 + (i % 300))}`
  let node: NodeProcess

  beforeAll(async () => {
    const src = join(tmp.dir, 'src')
    await makeNodeDir(
      src,
      Array.from({ length: N }, (_, i): [string, string] => [`key-${i}`, valueOf(i)]),
      { store: STORE, chunks: 2 },
    )
    const started = await startSingleNode({ dir: tmp.dir, token: 'fast-cold-admin-token-5e0a77', extraArgs: ['--http-read-path', 'fast'] })
    await started.install(STORE, src, { swap: true })
    await started.sigterm()
    expect(evictTree(join(tmp.dir, 'data'))).toBeGreaterThan(2)
    node = await started.restart()
  })
  afterAll(async () => {
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })

  test('pipelined GETs and a multi-get of cold records: right values, in order, through the cold path', async () => {
    const coldLookups = async (): Promise<number> => {
      const st = json<{ stores: { store: string; coldReads: { coldLookups: number } | null }[] }>(await node.request('/status'))
      return st.stores.find((s) => s.store === STORE)?.coldReads?.coldLookups ?? -1
    }
    const before = await coldLookups()
    const fastBefore = await counts(node.port)
    const keys = Array.from({ length: 20 }, (_, i) => i * 131)
    const many = Array.from({ length: 50 }, (_, i) => 7 + i * 53)
    const c = await RawHttpConnection.open(node.port)
    const gets = (ks: number[]): string => ks.map((i) => get(`key-${i}`)).join('')
    c.write(Buffer.concat([Buffer.from(gets(keys.slice(0, 10))), multiGet(many.map((i) => `key-${i}`)), Buffer.from(gets(keys.slice(10)))]))
    for (const i of keys.slice(0, 10)) expect((await c.read()).body.toString()).toBe(valueOf(i))
    expect((await c.read()).body).toEqual(encodeValues(many.map((i) => Buffer.from(valueOf(i)))))
    for (const i of keys.slice(10)) expect((await c.read()).body.toString()).toBe(valueOf(i))
    c.destroy()
    const fastAfter = await counts(node.port)
    // Answered on the fast path (the second /metrics request is the one handed off).
    expect({ answered: fastAfter.answered - fastBefore.answered, handedOff: fastAfter.handedOff - fastBefore.handedOff }).toEqual({
      answered: 21,
      handedOff: 1,
    })
    expect(await coldLookups()).toBeGreaterThan(before)
  })
})
