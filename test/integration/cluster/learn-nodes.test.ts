import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { pushStore, type PushEvent } from '../../../client/push/push-store'
import { StoreClient } from '../../../client/store-client'
import { json, request, startClusterFromFile, type NodeProcess } from '../../../testkit/cluster/node-process'
import { cli } from '../../../testkit/net/redis-cli'
import { buildKeys, nodePorts, writeLayoutFile } from '../../../testkit/cluster/layout-files'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * Growing 3 -> 5 when the three old nodes were started with a cluster file that lists only
 * themselves: the push hands every node the new nodes' addresses
 * (`POST /admin/cluster/nodes`), so an old node lists them to clients, forwards RESP reads to
 * them (in its serving workers too), and still knows them after a restart with its old file.
 */
jest.setTimeout(240_000)
const tmp = makeTmp('rostore-learn-')
const TOKEN = 'learn-nodes-token-0123456789'
const STORE = 'st'
const KEYS = 3000
const keyOf = (i: number): string => `key-${i}`
const nodes: NodeProcess[] = []
let oldFile: Cluster
let newFile: Cluster
let oldPath: string

const build = (cluster: Cluster, v: number): Promise<string> =>
  buildKeys(tmp.dir, cluster, { store: STORE, version: v, keys: KEYS, keyOf, chunks: 1 })

const admin = { authorization: `Bearer ${TOKEN}` }
const node = (id: number): NodeProcess => nodes.find((n) => n.opts.nodeId === id)!

/** The ids of `/stores/<s>` "nodes" of a node (where it tells clients the layout's nodes listen). */
async function listedNodes(id: number): Promise<number[]> {
  const r = await request(`${node(id).url}/stores/${STORE}`)
  expect(r.status).toBe(200)
  return json<{ nodes: { id: number }[] }>(r).nodes.map((n) => n.id)
}

/** Keys whose every replica is a new node (3 or 4) in the new layout. */
async function keysOnNewNodes(): Promise<number[]> {
  const client = await StoreClient.connect({ cluster: newFile, store: STORE, timeoutMs: 10_000 })
  try {
    return Array.from({ length: 500 }, (_, i) => i).filter((i) => client.replicasOf(keyOf(i)).every((r) => r >= 3))
  } finally {
    client.close()
  }
}

beforeAll(async () => {
  const addrs = await nodePorts(5)
  oldPath = await writeLayoutFile(tmp.dir, 'old.json', addrs.slice(0, 3), { owners: 3, partitions: 6 })
  const newPath = await writeLayoutFile(tmp.dir, 'new.json', addrs, { owners: 5, partitions: 10 })
  oldFile = await loadCluster(oldPath)
  newFile = await loadCluster(newPath)
  const dataDir = (id: number): string => join(tmp.dir, `data-${id}`)
  // Node 1 runs two serving workers: the supervisor learns, its workers must see it too.
  const old = await startClusterFromFile(oldPath, { ids: [0, 2], dataDir, token: TOKEN, extraArgs: ['--workers', '1'] })
  nodes.push(...old.nodes)
  nodes.push(...(await startClusterFromFile(oldPath, { ids: [1], dataDir, token: TOKEN, extraArgs: ['--workers', '2'] })).nodes)
  nodes.push(...(await startClusterFromFile(newPath, { ids: [3, 4], dataDir, token: TOKEN, extraArgs: ['--workers', '1'] })).nodes)
  expect((await pushStore({ cluster: oldFile, store: STORE, from: await build(oldFile, 1), adminToken: TOKEN })).status).toBe('live')
})

afterAll(async () => {
  await Promise.all(nodes.map((n) => (n.running ? n.kill9() : Promise.resolve(undefined))))
  tmp.cleanup()
})

test('before the push, an old node knows only the nodes of its file', async () => {
  const r = await request(`${node(0).url}/admin/cluster/nodes`, { headers: admin })
  expect(r.status).toBe(200)
  expect(json<{ nodes: { id: number }[] }>(r).nodes.map((n) => n.id)).toEqual([0, 1, 2])
})

test('the push hands the new file to every node; an old file then finds nodes 3 and 4 and reads their keys', async () => {
  const steps: string[] = []
  const onEvent = (e: PushEvent): void => void (e.type === 'step' && steps.push(e.message))
  const r = await pushStore({ cluster: newFile, store: STORE, from: await build(newFile, 2), adminToken: TOKEN, onEvent })
  expect(r.status).toBe('live')
  for (const id of [0, 1, 2]) expect(steps).toContain(`node ${id} learned node(s) 3, 4`)
  for (const id of [0, 1, 2]) expect({ id, listed: await listedNodes(id) }).toEqual({ id, listed: [0, 1, 2, 3, 4] })
  // Written durably in the data directory, the new nodes only.
  const kept = JSON.parse(await readFile(join(tmp.dir, 'data-0', 'cluster-nodes.json'), 'utf8')) as { nodes: { id: number }[] }
  expect(kept.nodes.map((n) => n.id)).toEqual([3, 4])

  const onNew = await keysOnNewNodes()
  expect(onNew.length).toBeGreaterThan(10)
  const client = await StoreClient.connect({ cluster: oldFile, store: STORE, timeoutMs: 10_000 })
  try {
    expect(client.version).toBe(2)
    expect(client.info.nodes?.map((n) => n.id)).toEqual([0, 1, 2, 3, 4])
    const values = await client.getMany(onNew.map(keyOf))
    expect(values.map((v) => v?.toString())).toEqual(onNew.map((i) => `v2:${keyOf(i)}`))
    expect(client.stats().failovers).toBe(0)
  } finally {
    client.close()
  }
})

test('a RESP reader connected to an old node (one or two workers) reads keys owned by nodes 3 and 4', async () => {
  const onNew = (await keysOnNewNodes()).slice(0, 6)
  for (const id of [0, 1]) {
    // Several connections on node 1 reach both of its workers (node:cluster hands them out in turn).
    for (const i of onNew) {
      expect({ id, key: i, got: await cli(node(id).respPort!, 'GET', `${STORE}:${keyOf(i)}`) }).toEqual({
        id,
        key: i,
        got: `"v2:${keyOf(i)}"`,
      })
    }
  }
})

test('a serving worker restarted after the push gets the learned nodes with its config', async () => {
  const n1 = node(1)
  // Both workers replaced, one after the other: no worker that saw the 'nodes' call is left.
  for (const [index, victim] of n1.workerPids()) {
    process.kill(victim, 'SIGKILL')
    await n1.waitForEvent((e) => e['event'] === 'worker-serving' && e['index'] === index && e['pid'] !== victim)
  }
  expect([...n1.workerPids().values()]).toHaveLength(2)
  for (const i of (await keysOnNewNodes()).slice(0, 4)) {
    expect({ key: i, got: await cli(n1.respPort!, 'GET', `${STORE}:${keyOf(i)}`) }).toEqual({ key: i, got: `"v2:${keyOf(i)}"` })
  }
})

test('an old node restarted with its old file still knows nodes 3 and 4', async () => {
  const idx = nodes.indexOf(node(2))
  const exit = await node(2).sigterm()
  expect(exit.code).toBe(0)
  nodes[idx] = await node(2).restart({ clusterFile: oldPath })
  const r = await request(`${node(2).url}/admin/cluster/nodes`, { headers: admin })
  expect(json<{ nodes: { id: number }[] }>(r).nodes.map((n) => n.id)).toEqual([0, 1, 2, 3, 4])
  expect(await listedNodes(2)).toEqual([0, 1, 2, 3, 4])
  const i = (await keysOnNewNodes())[0]!
  expect(await cli(node(2).respPort!, 'GET', `${STORE}:${keyOf(i)}`)).toBe(`"v2:${keyOf(i)}"`)
})

describe('POST /admin/cluster/nodes refuses what it must', () => {
  const post = (body: string | object, headers: Record<string, string> = admin): ReturnType<typeof request> =>
    request(`${node(0).url}/admin/cluster/nodes`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
  const errorOf = (r: Awaited<ReturnType<typeof request>>): { status: number; code: string; message: string } => {
    const e = json<{ error: { code: string; message: string } }>(r).error
    return { status: r.status, code: e.code, message: e.message }
  }
  const ok = { id: 9, host: 'node-9.example', port: 7009 }

  test('no token: 401, wrong token: 401, and nothing learned', async () => {
    expect(errorOf(await post({ nodes: [ok] }, {})).status).toBe(401)
    expect(errorOf(await post({ nodes: [ok] }, { authorization: 'Bearer wrong-token-0123456789' })).status).toBe(401)
    const r = await request(`${node(0).url}/admin/cluster/nodes`, { headers: admin })
    expect(json<{ nodes: { id: number }[] }>(r).nodes.map((n) => n.id)).toEqual([0, 1, 2, 3, 4])
  })

  test.each([
    ['not JSON', '{', /not JSON/],
    ['not an object', '[1]', /JSON object/],
    ['an unknown top-level field', { nodes: [ok], extra: 1 }, /unknown field "extra"/],
    ['nodes not an array', { nodes: 'x' }, /"nodes" must be an array/],
    ['an unknown node field', { nodes: [{ ...ok, partitions: [1] }] }, /nodes\[0\]: unknown field "partitions"/],
    ['a negative id', { nodes: [{ ...ok, id: -1 }] }, /"id" must be a non-negative integer/],
    ['a fractional id', { nodes: [{ ...ok, id: 1.5 }] }, /"id" must be a non-negative integer/],
    ['a duplicate id', { nodes: [ok, { ...ok, port: 7010 }] }, /duplicate node id 9/],
    ['a host with a slash', { nodes: [{ ...ok, host: 'a/b' }] }, /"host" must be a hostname or an IP literal/],
    ['a host of 254 characters', { nodes: [{ ...ok, host: `${'a'.repeat(60)}.`.repeat(4) + 'a'.repeat(10) }] }, /hostname/],
    ['port 0', { nodes: [{ ...ok, port: 0 }] }, /bad port 0/],
    ['port 65536', { nodes: [{ ...ok, port: 65536 }] }, /bad port 65536/],
    ['a bad respPort', { nodes: [{ ...ok, respPort: 'x' }] }, /bad respPort "x"/],
    ['1,025 nodes', { nodes: Array.from({ length: 1025 }, (_, i) => ({ id: i, host: 'h', port: 1 + i })) }, /more than 1024/],
  ])('%s: 400 with a clear message', async (_what, body, message) => {
    const e = errorOf(await post(body))
    expect({ status: e.status, code: e.code }).toEqual({ status: 400, code: 'RO_BAD_REQUEST' })
    expect(e.message).toMatch(message)
  })

  test("a new node on a known node's endpoint: 400", async () => {
    const n0 = newFile.nodes[0]!
    const e = errorOf(await post({ nodes: [{ id: 9, host: n0.host, port: n0.port }] }))
    expect(e).toEqual({ status: 400, code: 'RO_BAD_REQUEST', message: `node 9: ${n0.host}:${n0.port} is already node 0's` })
  })

  test('another address for its own id (or any known id): 409, nothing learned', async () => {
    const n0 = newFile.nodes[0]!
    const e = errorOf(await post({ nodes: [ok, { id: 0, host: n0.host, port: n0.port + 1, respPort: n0.respPort }] }))
    expect({ status: e.status, code: e.code }).toEqual({ status: 409, code: 'RO_CONFLICT' })
    expect(e.message).toMatch(/node 0 is known at/)
    const r = await request(`${node(0).url}/admin/cluster/nodes`, { headers: admin })
    expect(json<{ nodes: { id: number }[] }>(r).nodes.map((n) => n.id)).toEqual([0, 1, 2, 3, 4])
  })

  test('a body over the bound: 413', async () => {
    const e = errorOf(await post(`{"nodes":[${'0,'.repeat(200_000)}0]}`))
    expect({ status: e.status, code: e.code }).toEqual({ status: 413, code: 'RO_TOO_LARGE' })
  })

  test('a valid body: 200, the node is learned and answers with every node it knows', async () => {
    const r = await post({ nodes: [ok, ...newFile.nodes.map((n) => ({ id: n.id, host: n.host, port: n.port, respPort: n.respPort }))] })
    expect(r.status).toBe(200)
    const body = json<{ added: number[]; nodes: { id: number; host: string; port: number }[] }>(r)
    expect(body.added).toEqual([9])
    expect(body.nodes.map((n) => n.id)).toEqual([0, 1, 2, 3, 4, 9])
    expect(body.nodes.find((n) => n.id === 9)).toEqual(ok)
  })
})
