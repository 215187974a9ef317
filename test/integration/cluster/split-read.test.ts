import { join } from 'node:path'
import { buildVersion as buildRecords, numberedRecords } from '../../../testkit/cluster/build-version'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { ClusterAdmin } from '../../../client/cluster-admin'
import { pushStore } from '../../../client/push/push-store'
import { StoreClient } from '../../../client/store-client'
import { clusterVersions } from '../../../client/versions'
import { Nginx } from '../../../testkit/peers/nginx'
import { redisCli } from '../../../testkit/net/redis-cli'
import { startCluster, type TestCluster } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * A cluster left split (some nodes on one version, some on another, as a push killed in its
 * swap phase left it before the nodes decided by themselves): a multi-get through the
 * routing client, over HTTP and RESP, still answers, every key from one version; so does a
 * plain `redis-cli MGET` through any node's RESP port (the node reads its own keys and
 * forwards the others, which may be answered by another version).
 */

jest.setTimeout(90_000)
const tmp = makeTmp('rostore-split-read-')
const TOKEN = 'split-read-token-0123456789'
const STORE = 'st'
const KEYS = 3000
let nodes: TestCluster
let cluster: Cluster
let nginx: Nginx
let admin: ClusterAdmin
const names = Array.from({ length: KEYS }, (_, i) => `key-${i}`)

async function buildVersion(v: number): Promise<void> {
  await buildRecords({
    dir: tmp.dir,
    cluster,
    store: STORE,
    version: v,
    records: numberedRecords(KEYS, (i) => `v${v}-${i}`),
    output: join(tmp.dir, 'www', `v${v}`),
  })
}

/** Every value of the multi-get from one version; that version. */
async function oneVersion(transport: 'http' | 'resp'): Promise<number> {
  const client = await StoreClient.connect({ cluster, store: STORE, timeoutMs: 5000, transport, batchSize: 400 })
  try {
    const values = await client.getMany(names)
    const versions = new Set(values.map((v) => Number(/^v(\d+)-/.exec(v?.toString() ?? '')?.[1])))
    expect(versions.size).toBe(1)
    const v = [...versions][0]!
    expect(values.filter((val, i) => val?.toString() !== `v${v}-${i}`).length).toBe(0)
    return v
  } finally {
    client.close()
  }
}

/**
 * `redis-cli MGET` of every key through node `id`'s RESP port: its values from one version;
 * that version, and the serving process's count of many-key reads it had to read again
 * from one version (INFO on the same connection: each worker process counts its own).
 */
async function mgetThrough(id: number): Promise<{ version: number; mixedReads: number }> {
  const mget = ['MGET', ...names.map((k) => `${STORE}:${k}`)].join(' ')
  const r = await redisCli(nodes.nodes[id]!.respPort!, [], { raw: true, stdin: `${mget}\nINFO stats\n` })
  const lines = r.stdout.split('\n').slice(0, KEYS)
  const versions = new Set(lines.map((l) => /^v(\d+)-/.exec(l)?.[1] ?? `not a value: ${l.slice(0, 80)}`))
  expect({ node: id, versions: [...versions] }).toEqual({ node: id, versions: [expect.any(String)] })
  const version = Number([...versions][0])
  expect(lines.filter((l, i) => l !== `v${version}-${i}`).length).toBe(0)
  return { version, mixedReads: Number(/rostore_mixed_version_reads:(\d+)/.exec(r.stdout)?.[1]) }
}

beforeAll(async () => {
  nodes = await startCluster({ dir: tmp.dir, nodes: 3, partitionsPerNode: 3, token: TOKEN, resp: true })
  cluster = await loadCluster(nodes.clusterFile)
  admin = new ClusterAdmin(cluster, TOKEN)
  for (const v of [1, 2]) await buildVersion(v)
  nginx = await Nginx.launch({ root: join(tmp.dir, 'www') })
  for (const v of [1, 2])
    expect((await pushStore({ cluster, store: STORE, from: `${nginx.url}/v${v}`, adminToken: TOKEN })).status).toBe('live')
})

afterAll(async () => {
  admin?.close()
  await nodes?.killAll()
  await nginx?.dispose()
  tmp.cleanup()
})

test('one node left behind (nodes 0 and 1 on v2, node 2 on v1): every key from v2', async () => {
  await admin.node(2).swap(STORE, 1)
  expect((await clusterVersions(cluster, STORE, TOKEN)).map((n) => n.live)).toEqual([2, 2, 1])
  expect(await oneVersion('http')).toBe(2)
  expect(await oneVersion('resp')).toBe(2)
})

test("the same split through each node's RESP port: MGET answers every key from v2, the node behind reads its own keys again from v2", async () => {
  expect((await clusterVersions(cluster, STORE, TOKEN)).map((n) => n.live)).toEqual([2, 2, 1])
  for (const id of [0, 1]) expect((await mgetThrough(id)).version).toBe(2)
  const behind = await mgetThrough(2)
  expect(behind.version).toBe(2)
  expect(behind.mixedReads).toBeGreaterThan(0)
})

test('one node ahead (node 0 on v2, nodes 1 and 2 on v1): v2 cannot serve every key, so every key from v1', async () => {
  await admin.node(1).swap(STORE, 1)
  expect((await clusterVersions(cluster, STORE, TOKEN)).map((n) => n.live)).toEqual([2, 1, 1])
  expect(await oneVersion('http')).toBe(1)
  expect(await oneVersion('resp')).toBe(1)
  for (const id of [0, 1, 2]) expect((await mgetThrough(id)).version).toBe(1)
})
