import type Redis from 'ioredis'
import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import { parseCluster } from '../../../cluster/cluster'
import { nativeFunctions } from '../../../common/native'
import { writeInput } from '../../../testkit/stores/input-files'
import { json, startSingleNode, type NodeProcess } from '../../../testkit/cluster/node-process'
import { realisticRecords, valueShapes } from '../../../testkit/stores/realistic-values'
import { makeTmp } from '../../../testkit/stores/tmp'
import { connectIoredis } from '../../../testkit/net/redis-cli'

/**
 * A node serving a version built with --compression zstd and a trained dictionary: HTTP
 * GET, RESP GET and the streamed dump answer plain values, and /status says how the
 * version is compressed.
 */
jest.setTimeout(60_000)
const TOKEN = 'zstd-serving-admin-token-0123456789'
const describeNative = nativeFunctions() ? describe : describe.skip

describeNative('a zstd version with a dictionary, served', () => {
  const tmp = makeTmp('rostore-zstd-serving-')
  const recs = [...realisticRecords(11, 2000, 'user-'), ...valueShapes()]
  let node: NodeProcess
  let redis: Redis

  beforeAll(async () => {
    const input = join(tmp.dir, 'in.tsv')
    await writeInput(input, 'tsv', recs)
    // The layout of startSingleNode's cluster file: node 0 holding partitions 0 and 1.
    const cluster = parseCluster({ name: 'test-cluster', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0, 1] }] })
    const out = join(tmp.dir, 'out')
    await buildStore({
      inputs: [input],
      format: 'tsv',
      cluster,
      store: 'st',
      output: out,
      version: 3,
      workers: 1,
      memoryMb: 64,
      compression: 'zstd',
    })
    node = await startSingleNode({ dir: tmp.dir, token: TOKEN, workers: 1, extraArgs: ['--resp-port', '0', '--resp-default-store', 'st'] })
    await node.install('st', out, { swap: true })
    redis = await connectIoredis(node.respPort!)
  })
  afterAll(async () => {
    redis?.disconnect()
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })

  test('HTTP and RESP answer the plain values', async () => {
    for (const [k, v] of [...recs.slice(0, 50), ...recs.slice(-5)]) {
      const r = await node.request(`/stores/st/keys/${encodeURIComponent(k)}`)
      expect(r.status).toBe(200)
      expect(r.body.toString()).toBe(v)
      expect(await redis.get(k)).toBe(v)
    }
    expect((await node.request('/stores/st/keys/absent')).status).toBe(404)
    expect(await redis.get('absent')).toBeNull()
  })

  test('the streamed dump gives every record with its plain value', async () => {
    const r = await node.request('/admin/stores/st/dump/entries?format=jsonl', { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(r.status).toBe(200)
    const want = new Map(recs)
    const lines = r.body
      .toString()
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    const entries = lines.filter((l) => typeof l['key'] === 'string' && 'value' in l)
    expect(entries.length).toBe(recs.length)
    for (const e of entries) expect(e['value']).toBe(want.get(e['key'] as string))
  })

  test('/status names the codec, the dictionary size and the value ratio', async () => {
    const st = json<{ stores: { store: string; compression: Record<string, unknown> }[] }>(await node.request('/status'))
    const c = st.stores.find((s) => s.store === 'st')?.compression
    expect(c).toMatchObject({ codec: 'zstd', level: 3 })
    expect(c?.['dictionaryBytes']).toBeGreaterThan(1000)
    expect(c?.['valueRatio']).toBeGreaterThan(0)
    expect(c?.['valueRatio']).toBeLessThan(0.9)
  })
})
