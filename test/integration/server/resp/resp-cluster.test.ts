import { execFile } from 'node:child_process'
import { buildVersion, numberedRecords } from '../../../../testkit/cluster/build-version'
import { join } from 'node:path'
import Redis from 'ioredis'
import { createClient, RESP_TYPES } from 'redis'
import { loadCluster, type Cluster } from '../../../../cluster/cluster'
import { StoreClient } from '../../../../client/store-client'
import { cliPath } from '../../../../common/paths'
import { startCluster, type TestCluster } from '../../../../testkit/cluster/node-process'
import { redisCli } from '../../../../testkit/net/redis-cli'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * Real Redis clients (ioredis, node-redis) against a 3-node cluster of real `rostore
 * serve` processes, all through node 0: keys held by nodes 1 and 2 are forwarded by node
 * 0 to their replicas. Replication 2, so a killed node's keys still come from their
 * other replica. The nodes share a read token (AUTH on client and node-to-node
 * connections). The routing client's RESP transport reads the same keys.
 */
jest.setTimeout(120_000)
const tmp = makeTmp('rostore-resp-cluster-')
const ADMIN = 'resp-cluster-admin-0123456789'
const READ = 'resp-cluster-read-9876543210'
const KEYS = 1500
let nodes: TestCluster
let cluster: Cluster
let remote: number[] = []
let ioredis: Redis

const keyOf = (i: number): string => `key-${i}`
const valueOf = (i: number): string => `v1-${i}`

beforeAll(async () => {
  // One serving process per node: INFO's counters are per serving loop, and these tests
  // compare them across connections (RESP with several workers: resp-workers.test.ts).
  nodes = await startCluster({
    dir: tmp.dir,
    nodes: 3,
    partitionsPerNode: 3,
    token: ADMIN,
    resp: true,
    env: { ROSTORE_READ_TOKEN: READ },
    extraArgs: ['--workers', '1'],
  })
  cluster = await loadCluster(nodes.clusterFile)
  const out = await buildVersion({
    dir: tmp.dir,
    cluster,
    version: 1,
    records: numberedRecords(KEYS, valueOf, keyOf),
    output: join(tmp.dir, 'out'),
  })
  // Each node installs its own partitions of the (format-2) build output.
  await Promise.all(nodes.nodes.map((n) => n.install('st', out, { swap: true })))
  const http = await StoreClient.connect({ cluster, store: 'st', readToken: READ })
  remote = Array.from({ length: KEYS }, (_, i) => i).filter((i) => !http.replicasOf(keyOf(i)).includes(0))
  http.close()
  ioredis = new Redis({ host: '127.0.0.1', port: nodes.nodes[0]!.respPort!, password: READ, maxRetriesPerRequest: 1, lazyConnect: true })
  await ioredis.connect()
})

afterAll(async () => {
  ioredis?.disconnect()
  await nodes?.killAll()
  tmp.cleanup()
})

function runCli(args: readonly string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath(), ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

async function info(node: number, section: string): Promise<Record<string, string>> {
  const r = await redisCli(nodes.nodes[node]!.respPort!, ['INFO', section], { raw: true, flags: ['-a', READ, '--no-auth-warning'] })
  return Object.fromEntries(
    r.stdout
      .split(/\r?\n/)
      .filter((l) => l.includes(':'))
      .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]),
  )
}

test('the cluster holds keys node 0 does not', () => {
  // With replication 2 of 3 nodes, about a third of the keys live on nodes 1 and 2 only.
  expect(remote.length).toBeGreaterThan(KEYS / 6)
})

test('ioredis through node 0: GET of keys on other nodes, MGET of every key, a pipeline', async () => {
  for (const i of remote.slice(0, 100)) expect(await ioredis.get(`st:${keyOf(i)}`)).toBe(valueOf(i))
  expect(await ioredis.get('st:absent')).toBeNull()
  const all = Array.from({ length: KEYS }, (_, i) => `st:${keyOf(i)}`)
  const values = await ioredis.mget(...all, 'st:absent')
  expect(values).toEqual([...Array.from({ length: KEYS }, (_, i) => valueOf(i)), null])
  const p = ioredis.pipeline()
  for (let i = 0; i < 300; i++) p.get(`st:${keyOf((i * 7) % KEYS)}`)
  p.exists(`st:${keyOf(remote[0]!)}`, 'st:absent', `st:${keyOf(0)}`)
  p.strlen(`st:${keyOf(remote[1]!)}`)
  p.getrange(`st:${keyOf(remote[2]!)}`, 0, 1)
  const res = (await p.exec())!
  expect(res.slice(0, 300).map(([err, v]) => (err ? String(err) : v))).toEqual(
    Array.from({ length: 300 }, (_, i) => valueOf((i * 7) % KEYS)),
  )
  expect(res.slice(300).map(([, v]) => v)).toEqual([2, valueOf(remote[1]!).length, 'v1'])
  await expect(ioredis.set('st:x', 'y')).rejects.toThrow(/READONLY/)
})

test('node-redis through node 0, RESP2 and RESP3: GET, MGET, pipelines', async () => {
  for (const RESP of [2, 3] as const) {
    const client = createClient({ socket: { host: '127.0.0.1', port: nodes.nodes[0]!.respPort! }, password: READ, RESP })
    client.on('error', () => undefined)
    await client.connect()
    try {
      for (const i of remote.slice(100, 150)) expect(await client.get(`st:${keyOf(i)}`)).toBe(valueOf(i))
      expect(await client.get('st:absent')).toBeNull()
      const some = remote.slice(0, 400).map((i) => `st:${keyOf(i)}`)
      expect(await client.mGet([...some, 'st:absent'])).toEqual([...remote.slice(0, 400).map(valueOf), null])
      // Concurrent commands are pipelined by node-redis; execAsPipeline sends a batch without MULTI.
      const many = await Promise.all(remote.slice(0, 200).map((i) => client.get(`st:${keyOf(i)}`)))
      expect(many).toEqual(remote.slice(0, 200).map(valueOf))
      const batch = await client
        .multi()
        .get(`st:${keyOf(remote[5]!)}`)
        .exists([`st:${keyOf(remote[6]!)}`])
        .execAsPipeline()
      expect(batch).toEqual([valueOf(remote[5]!), 1])
      const raw = await client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer }).get(`st:${keyOf(remote[7]!)}`)
      expect(Buffer.isBuffer(raw) && raw.toString()).toBe(valueOf(remote[7]!))
    } finally {
      client.destroy()
    }
  }
})

test('INFO counts forwarded keys on node 0 and the keys its peers answered for it', async () => {
  const s0 = await info(0, 'stats')
  expect(Number(s0['rostore_forwarded_keys'])).toBeGreaterThanOrEqual(remote.length)
  expect(Number(s0['rostore_local_keys'])).toBeGreaterThan(0)
  const peers = Number((await info(1, 'stats'))['rostore_peer_keys']) + Number((await info(2, 'stats'))['rostore_peer_keys'])
  expect(peers).toBe(Number(s0['rostore_forwarded_keys']))
  const ks = await info(0, 'keyspace')
  expect(ks['store_st']).toMatch(/^version=1,records=\d+,stale=0,local_hits=\d+,local_misses=\d+,forwarded_hits=[1-9]\d*,/)
  const metrics = await nodes.nodes[0]!.request('/metrics')
  expect(metrics.body.toString()).toMatch(/rostore_resp_keys_total\{store="st",source="forwarded",result="hit"\} [1-9]/)
})

test('the routing client over RESP reads every key from its replicas directly', async () => {
  const client = await StoreClient.connect({ cluster, store: 'st', transport: 'resp', readToken: READ })
  try {
    const keys = Array.from({ length: KEYS }, (_, i) => keyOf(i))
    const values = await client.getMany([...keys, 'absent'])
    expect(values.map((v) => v?.toString())).toEqual([...keys.map((_, i) => valueOf(i)), undefined])
    expect((await client.get(keyOf(remote[0]!)))?.toString()).toBe(valueOf(remote[0]!))
  } finally {
    client.close()
  }
  await expect(StoreClient.connect({ cluster, store: 'st', transport: 'resp', readToken: 'wrong' })).rejects.toMatchObject({
    code: 'RO_UNAUTHORIZED',
  })
})

test('by default the routing client reads over RESP (every node has a RESP port); transport http still forces HTTP', async () => {
  /** HTTP reads of keys the nodes have answered (description reads not counted). */
  const httpKeyReads = async (): Promise<number> => {
    let sum = 0
    for (const n of nodes.nodes) {
      const text = (await n.request('/metrics')).body.toString()
      for (const m of text.matchAll(/^rostore_requests_total\{[^}]*op="(?:get|multi_get)"[^}]*\} (\d+)/gm)) sum += Number(m[1])
    }
    return sum
  }
  const keys = Array.from({ length: KEYS }, (_, i) => keyOf(i))
  const before = await httpKeyReads()
  const auto = await StoreClient.connect({ cluster, store: 'st', readToken: READ })
  try {
    expect(auto.transport).toBe('resp')
    expect((await auto.getMany(keys)).map((v) => v?.toString())).toEqual(keys.map((_, i) => valueOf(i)))
    expect((await auto.get(keyOf(remote[0]!)))?.toString()).toBe(valueOf(remote[0]!))
  } finally {
    auto.close()
  }
  expect(await httpKeyReads()).toBe(before)
  const http = await StoreClient.connect({ cluster, store: 'st', transport: 'http', readToken: READ })
  try {
    expect(http.transport).toBe('http')
    expect((await http.get(keyOf(remote[0]!)))?.toString()).toBe(valueOf(remote[0]!))
  } finally {
    http.close()
  }
  expect(await httpKeyReads()).toBeGreaterThan(before)
})

test('rostore get --transport resp reads through the routing client with the read token from the environment', async () => {
  const keys = [keyOf(remote[0]!), keyOf(1), 'absent']
  const r = await runCli(['get', '--cluster', nodes.clusterFile, '--store', 'st', '--transport', 'resp', '--json', ...keys], {
    ROSTORE_READ_TOKEN: READ,
  })
  expect(r.code).toBe(0)
  expect(
    r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown),
  ).toEqual([
    { key: keys[0], found: true, value: valueOf(remote[0]!) },
    { key: keys[1], found: true, value: valueOf(1) },
    { key: 'absent', found: false },
  ])
})

test('staleness: node 0 marked stale forwards even the keys it holds; a stale peer is passed over', async () => {
  const all = Array.from({ length: KEYS }, (_, i) => `st:${keyOf(i)}`)
  const want = Array.from({ length: KEYS }, (_, i) => valueOf(i))
  expect((await nodes.nodes[0]!.admin('PUT', '/stores/st/stale', { reason: 'test' })).status).toBe(200)
  const local0 = Number((await info(0, 'stats'))['rostore_local_keys'])
  expect(await ioredis.mget(...all)).toEqual(want)
  expect(Number((await info(0, 'stats'))['rostore_local_keys'])).toBe(local0)
  expect((await nodes.nodes[0]!.admin('DELETE', '/stores/st/stale')).status).toBe(200)
  expect((await nodes.nodes[2]!.admin('PUT', '/stores/st/stale', { reason: 'test' })).status).toBe(200)
  expect(await ioredis.mget(...all)).toEqual(want)
  expect((await nodes.nodes[2]!.admin('DELETE', '/stores/st/stale')).status).toBe(200)
})

test('a replica fails over: with node 1 killed, node 0 still answers every key', async () => {
  const failures0 = Number((await info(0, 'stats'))['rostore_forward_failures'])
  await nodes.nodes[1]!.kill9()
  const all = Array.from({ length: KEYS }, (_, i) => `st:${keyOf(i)}`)
  expect(await ioredis.mget(...all)).toEqual(Array.from({ length: KEYS }, (_, i) => valueOf(i)))
  for (const i of remote.slice(0, 50)) expect(await ioredis.get(`st:${keyOf(i)}`)).toBe(valueOf(i))
  expect(Number((await info(0, 'stats'))['rostore_forward_failures'])).toBeGreaterThan(failures0)
  const client = await StoreClient.connect({ cluster, store: 'st', transport: 'resp', readToken: READ })
  try {
    const values = await client.getMany(Array.from({ length: KEYS }, (_, i) => keyOf(i)))
    expect(values.map((v) => v?.toString())).toEqual(Array.from({ length: KEYS }, (_, i) => valueOf(i)))
  } finally {
    client.close()
  }
})
