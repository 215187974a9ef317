import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import { parseCluster, type Cluster } from '../../../cluster/cluster'
import { buildRing, routeHash } from '../../../cluster/routing'
import { createKeyHasher } from '../../../formats/store/layout/key-hash'
import { decodeValues, encodeKeys } from '../../../formats/wire/multiget'
import { nullLogger } from '../../../server/log'
import { startNode, type RunningNode } from '../../../server/node'
import { writeInput } from '../../../testkit/stores/input-files'
import { json, request } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * A node routes by the layout of its live version, not by its startup cluster file: the
 * file lists nodes 0-2 with node 2 outside its layout (addresses only), the version was
 * built for a two-node layout {0, 1}. Node 1 answers its own keys, refuses the others as
 * misdirected (never "absent"), and describes the version's layout with every node's
 * address; node 2, which joined empty, answers "not serving this store".
 */
jest.setTimeout(60_000)
const tmp = makeTmp('rostore-layout-routing-')
const TOKEN = 'layout-routing-token-0123456789'
const KEYS = 400
let node1: RunningNode
let node2: RunningNode
const fileCluster: Cluster = parseCluster({
  name: 'grow',
  nodes: [
    { id: 0, host: '127.0.0.1', port: 7000, partitions: [0, 2] },
    { id: 1, host: '127.0.0.1', port: 7001, respPort: 7101, partitions: [1, 3] },
    { id: 2, host: '127.0.0.1', port: 7002, partitions: [] },
  ],
})
const keys = Array.from({ length: KEYS }, (_, i) => `key-${i}`)
let owner: (key: string) => number

async function start(nodeId: number): Promise<RunningNode> {
  return startNode({
    cluster: fileCluster,
    nodeId,
    dataDir: join(tmp.dir, `data-${nodeId}`),
    adminToken: TOKEN,
    bind: '127.0.0.1',
    port: 0,
    log: nullLogger,
    defaultMetrics: false,
  })
}

beforeAll(async () => {
  const input = join(tmp.dir, 'in.tsv')
  await writeInput(
    input,
    'tsv',
    keys.map((k) => [k, `value-of-${k}`] as [string, string]),
  )
  await buildStore({
    inputs: [input],
    format: 'tsv',
    cluster: fileCluster,
    store: 'st',
    output: join(tmp.dir, 'out'),
    version: 7,
    chunks: 2,
    workers: 1,
  })
  const ring = buildRing([
    { id: 0, partitions: [0, 2] },
    { id: 1, partitions: [1, 3] },
  ])
  const hasher = await createKeyHasher('md5')
  owner = (key) => routeHash(ring, hasher.hash(Buffer.from(key)), 1)[0]!
  ;[node1, node2] = await Promise.all([start(1), start(2)])
  const r = await request(`${node1.url}/admin/stores/st/install`, {
    method: 'POST',
    body: { path: join(tmp.dir, 'out'), swap: true },
    headers: { authorization: `Bearer ${TOKEN}` },
  })
  expect(r.status).toBe(202)
  for (;;) {
    const j = json(await request(`${node1.url}/admin/jobs/${String(json(r)['id'])}`, { headers: { authorization: `Bearer ${TOKEN}` } }))
    if (j['state'] !== 'running') {
      expect(j['state']).toBe('succeeded')
      break
    }
    await new Promise((res) => setTimeout(res, 20))
  }
})

afterAll(async () => {
  await Promise.all([node1?.close(), node2?.close()])
  tmp.cleanup()
})

test('the build recorded the layout of the nodes with partitions only', async () => {
  const m = json(await request(`${node1.url}/stores/st`))
  expect(m).toMatchObject({
    version: 7,
    nodeId: 1,
    replication: 1,
    partitions: [1, 3],
    layout: [
      { id: 0, partitions: [0, 2] },
      { id: 1, partitions: [1, 3] },
    ],
    // Addresses of the layout's nodes from the node's cluster file: not node 2.
    nodes: [
      { id: 0, host: '127.0.0.1', port: 7000 },
      { id: 1, host: '127.0.0.1', port: 7001, respPort: 7101 },
    ],
  })
})

test("a node answers its own keys and refuses another node's keys as misdirected, with the deciding version", async () => {
  const mine = keys.filter((k) => owner(k) === 1)
  const theirs = keys.filter((k) => owner(k) === 0)
  expect(mine.length).toBeGreaterThan(50)
  expect(theirs.length).toBeGreaterThan(50)
  for (const k of mine.slice(0, 20)) {
    const r = await request(`${node1.url}/stores/st/keys/${k}`)
    expect(r.status).toBe(200)
    expect(r.body.toString()).toBe(`value-of-${k}`)
  }
  for (const k of theirs.slice(0, 20)) {
    const r = await request(`${node1.url}/stores/st/keys/${k}`)
    expect(r.status).toBe(421)
    expect(r.headers['x-rostore-version']).toBe('7')
    expect(json(r)).toMatchObject({ error: { code: 'RO_NOT_SERVING' } })
  }
  // Absent keys of this node are still absent (404, empty body).
  const absent = Array.from({ length: 200 }, (_, i) => `absent-${i}`).find((k) => owner(k) === 1)!
  const miss = await request(`${node1.url}/stores/st/keys/${absent}`)
  expect(miss.status).toBe(404)
  expect(miss.body.length).toBe(0)
})

test('a multi-get of own keys is answered; one key of another node makes it misdirected', async () => {
  const mine = keys.filter((k) => owner(k) === 1).slice(0, 30)
  const ok = await request(`${node1.url}/stores/st/multi-get`, { method: 'POST', body: encodeKeys(mine) })
  expect(ok.status).toBe(200)
  expect(decodeValues(ok.body, mine.length).map((v) => v?.toString())).toEqual(mine.map((k) => `value-of-${k}`))
  const mixed = [...mine, keys.find((k) => owner(k) === 0)!]
  const bad = await request(`${node1.url}/stores/st/multi-get`, { method: 'POST', body: encodeKeys(mixed) })
  expect(bad.status).toBe(421)
  expect(json(bad)).toMatchObject({ error: { code: 'RO_NOT_SERVING' } })
})

test('a node that joined empty answers "not serving this store" on every read route, never absent', async () => {
  for (const [method, path, body] of [
    ['GET', '/stores/st/keys/key-1', undefined],
    ['GET', '/stores/st', undefined],
    ['POST', '/stores/st/multi-get', encodeKeys(['key-1'])],
  ] as const) {
    const r = await request(`${node2.url}${path}`, { method, body })
    expect({ path, status: r.status }).toEqual({ path, status: 421 })
    expect(json(r)).toMatchObject({ error: { code: 'RO_NOT_SERVING' } })
  }
  expect(json(await request(`${node2.url}/stores`))).toEqual({ stores: [] })
})
