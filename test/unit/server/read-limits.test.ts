import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { NodeClient } from '../../../client/node-client'
import { decodeValuesPartial, encodeKeys, TRUNCATED } from '../../../formats/wire/multiget'
import { nullLogger } from '../../../server/log'
import { startNode, type NodeOptions, type RunningNode } from '../../../server/node'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { json, request } from '../../../testkit/cluster/node-process'
import { waitUntil } from '../../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The bounds on read responses, on an in-process node with small
 * limits: a multi-get stops at --max-response-bytes with the end frame and the client
 * asks for the rest; a single value over the limit is 413; a response its client stops
 * reading is cut after --send-timeout-ms; connections beyond --max-connections are closed.
 */
const TOKEN = 'read-limits-token-0123456789'
const MIB = 1 << 20
const cluster = { name: 'unit', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0] }] }
const tmp = makeTmp('rostore-read-limits-')

/** Value of key i: 1 MiB (i < 16) or 100 bytes, starting with its key. */
function value(i: number): Buffer {
  const v = Buffer.alloc(i < 16 ? MIB : 100, i % 251)
  v.write(`key-${i}|`)
  return v
}

let src = ''

beforeAll(async () => {
  src = join(tmp.dir, 'src')
  await makeNodeDir(
    src,
    Array.from({ length: 40 }, (_, i) => [`key-${i}`, value(i)] as [string, Buffer]),
    { store: 'big', version: 1 },
  )
})

afterAll(() => tmp.cleanup())

/** An in-process node of its own, serving version 1 of store "big". */
async function startWith(opts: Partial<NodeOptions>): Promise<RunningNode> {
  const n = await startNode({
    cluster,
    nodeId: 0,
    dataDir: tmp.fresh(),
    adminToken: TOKEN,
    bind: '127.0.0.1',
    port: 0,
    log: nullLogger,
    defaultMetrics: false,
    ...opts,
  })
  const sv = await n.dataDir.getOrCreate('big')
  await sv.install(src)
  await sv.swap(1)
  return n
}

test('a multi-get stops at the response limit with the end frame; the client asks for the rest', async () => {
  const node = await startWith({ maxResponseBytes: 5 * MIB })
  const keys = Array.from({ length: 20 }, (_, i) => `key-${i}`)
  const r = await request(`${node.url}/stores/big/multi-get`, { method: 'POST', body: encodeKeys(keys) })
  expect(r.status).toBe(200)
  expect(r.body.length).toBeLessThanOrEqual(5 * MIB)
  expect(r.body.readUInt32BE(r.body.length - 4)).toBe(TRUNCATED)
  const page = decodeValuesPartial(r.body, keys.length)
  expect(page.truncated).toBe(true)
  expect(page.values.length).toBe(4)
  page.values.forEach((v, i) => expect(v?.equals(value(i))).toBe(true))

  const client = new NodeClient({ id: 0, host: '127.0.0.1', port: node.port, partitions: [0] })
  try {
    const all = await client.getMany('big', [...keys, 'absent', 'key-39'])
    expect(all.version).toBe(1)
    expect(all.values.length).toBe(22)
    keys.forEach((_, i) => expect(all.values[i]?.equals(value(i))).toBe(true))
    expect(all.values[20]).toBeUndefined()
    expect(all.values[21]?.equals(value(39))).toBe(true)
  } finally {
    client.close()
    await node.close()
  }
})

test('a value larger than the limit is 413 RO_TOO_LARGE, by single get and by multi-get', async () => {
  const small = await startWith({ maxResponseBytes: MIB / 2 })
  try {
    const g = await request(`${small.url}/stores/big/keys/key-3`)
    expect(g.status).toBe(413)
    expect(json<{ error: { code: string } }>(g).error.code).toBe('RO_TOO_LARGE')
    expect((await request(`${small.url}/stores/big/keys/key-30`)).status).toBe(200)
    const m = await request(`${small.url}/stores/big/multi-get`, { method: 'POST', body: encodeKeys(['key-3', 'key-30']) })
    expect(m.status).toBe(413)
  } finally {
    await small.close()
  }
})

/**
 * Sends a multi-get of `keys` on a raw socket and stops reading once the answer has
 * started (so the node holds a lease on the version it reads), long before its end.
 */
async function stalledMultiGet(port: number, keys: readonly string[]): Promise<Socket> {
  const body = encodeKeys(keys)
  const s = connect(port, '127.0.0.1')
  s.on('error', () => undefined)
  await new Promise<void>((resolve) => {
    s.once('data', () => {
      s.pause()
      resolve()
    })
    s.write(`POST /stores/big/multi-get HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`)
    s.write(body)
  })
  return s
}

test('a client that stops reading is cut after the send timeout, and its reader lease is released', async () => {
  const node = await startWith({ sendTimeoutMs: 500 })
  try {
    const sv = node.dataDir.get('big')!
    const src2 = join(tmp.dir, 'src2')
    await makeNodeDir(
      src2,
      Array.from({ length: 40 }, (_, i) => [`key-${i}`, value(i)] as [string, Buffer]),
      { store: 'big', version: 2 },
    )
    await sv.install(src2)
    // 40 MiB each: far more than loopback socket buffers take.
    const keys = Array.from({ length: 40 }, (_, i) => `key-${i % 16}`)
    const stalled = await Promise.all([stalledMultiGet(node.port, keys), stalledMultiGet(node.port, keys)])
    // The stalled responses read version 1: after a swap its reader drains until they go.
    await sv.swap(2)
    expect(await sv.serving.draining()).toBe(1)
    // The node cuts both after 500 ms without progress: version 1's reader closes.
    expect(await waitUntil(async () => (await sv.serving.draining()) === 0, 20_000)).toBe(true)
    for (const s of stalled) s.destroy()
  } finally {
    await node.close()
  }
})

test('connections beyond --max-connections are closed on arrival; the node keeps serving', async () => {
  const node = await startWith({ maxConnections: 12 })
  const open: Socket[] = []
  try {
    for (let i = 0; i < 12; i++) {
      const s = connect(node.port, '127.0.0.1')
      s.on('error', () => undefined)
      await new Promise<void>((r) => s.once('connect', () => r()))
      open.push(s)
    }
    // The node may not have accepted all 12 yet when their clients see 'connect': a few
    // extra connections may still be served; one of a bounded number must be refused.
    const tryExtra = (): Promise<string> => {
      const extra = connect(node.port, '127.0.0.1')
      return new Promise<string>((r) => {
        extra.on('error', (e: NodeJS.ErrnoException) => r(e.code ?? 'error'))
        extra.on('close', () => r('close'))
        extra.on('data', () => {
          extra.destroy()
          r('data')
        })
        extra.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
      })
    }
    let ended = 'data'
    for (let i = 0; i < 50 && ended === 'data'; i++) ended = await tryExtra()
    expect(ended).not.toBe('data')
    expect(
      (await node.metrics.registry.getSingleMetric('rostore_connections_dropped_total')?.get())?.values[0]?.value,
    ).toBeGreaterThanOrEqual(1)
  } finally {
    for (const s of open) s.destroy()
  }
  // Once the node has seen those close, it takes connections again.
  const healthy = async (): Promise<boolean> =>
    request(`${node.url}/health`, { agent: false }).then(
      (r) => r.status === 200,
      () => false,
    )
  expect(await waitUntil(healthy, 5000)).toBe(true)
  await node.close()
})
