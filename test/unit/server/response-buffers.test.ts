import { Agent } from 'node:http'
import { join } from 'node:path'
import { decodeValues, encodeKeys } from '../../../formats/wire/multiget'
import { nullLogger } from '../../../server/log'
import { startNode, type RunningNode } from '../../../server/node'
import { GrowableBuffer } from '../../../common/growable-buffer'
import { ResponseBuffers } from '../../../server/http/response-buffers'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { request } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

test('a sink grows keeping its bytes; the pool hands sinks back empty and keeps a bounded number of bounded size', () => {
  const s = new GrowableBuffer(4)
  s.reserve(3)
  s.buf.write('abc', s.pos)
  s.pos += 3
  s.reserve(10)
  expect(s.buf.length).toBeGreaterThanOrEqual(13)
  s.buf.write('defghijklm', s.pos)
  s.pos += 10
  expect(s.bytes().toString()).toBe('abcdefghijklm')

  const pool = new ResponseBuffers(2, 64, 8)
  const a = pool.acquire()
  a.reserve(5)
  a.pos = 5
  pool.release(a)
  const again = pool.acquire()
  expect(again).toBe(a)
  expect(again.pos).toBe(0)
  const big = pool.acquire()
  big.reserve(100) // grows past maxKeepBytes: not kept
  pool.release(big)
  expect(pool.idle).toBe(0)
  pool.release(again)
  pool.release(new GrowableBuffer(8))
  pool.release(new GrowableBuffer(8))
  expect(pool.idle).toBe(2)
})

/** Values of a few KiB, each spelling its own key, so any byte from another answer shows. */
const valueOf = (i: number): string => `${i}:`.repeat(200 + ((i * 37) % 700)).slice(0, 600 + ((i * 53) % 3000))

describe('multi-get answers from reused bodies', () => {
  const tmp = makeTmp('rostore-bodies-')
  let node: RunningNode
  const N = 400

  beforeAll(async () => {
    const src = join(tmp.dir, 'src')
    await makeNodeDir(
      src,
      Array.from({ length: N }, (_, i) => [`k${i}`, valueOf(i)] as [string, string]),
      { store: 's', version: 1, chunks: 2 },
    )
    node = await startNode({
      cluster: { name: 'unit', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0] }] },
      nodeId: 0,
      dataDir: join(tmp.dir, 'data'),
      adminToken: 'unit-test-token-0123456789',
      bind: '127.0.0.1',
      port: 0,
      log: nullLogger,
      defaultMetrics: false,
    })
    const r = await request(`${node.url}/admin/stores/s/install`, {
      method: 'POST',
      body: { path: src, swap: true },
      headers: { authorization: 'Bearer unit-test-token-0123456789' },
    })
    expect(r.status).toBe(202)
    for (;;) {
      const st = await request(`${node.url}/stores/s/keys/k0`)
      if (st.status === 200) break
      await new Promise((res) => setTimeout(res, 20))
    }
  })
  afterAll(async () => {
    await node.close()
    tmp.cleanup()
  })

  test('240 multi-gets of different sizes on 24 connections at once: each answer is its own, byte for byte', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 24 })
    try {
      const one = async (r: number): Promise<void> => {
        // 1 to 300 keys from a different start each time, some absent.
        const count = 1 + ((r * 97) % 300)
        const keys = Array.from({ length: count }, (_, j) => `k${(r * 31 + j * 7) % (N + 20)}`)
        const res = await request(`${node.url}/stores/s/multi-get`, { method: 'POST', body: encodeKeys(keys), agent })
        expect(res.status).toBe(200)
        const got = decodeValues(res.body, keys.length).map((v) => v?.toString())
        expect(got).toEqual(keys.map((k) => (Number(k.slice(1)) < N ? valueOf(Number(k.slice(1))) : undefined)))
      }
      await Promise.all(Array.from({ length: 240 }, (_, r) => one(r)))
    } finally {
      agent.destroy()
    }
  })
})
