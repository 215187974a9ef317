import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { isStoreError } from '../../../common/errors'
import { pushStore } from '../../../client/push/push-store'
import { rollbackCluster } from '../../../client/push/rollback'
import { StoreClient } from '../../../client/store-client'
import { clusterVersions } from '../../../client/versions'
import { writeInput } from '../../../testkit/stores/input-files'
import { Nginx } from '../../../testkit/peers/nginx'
import { startCluster, type TestCluster } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

jest.setTimeout(120_000)
const tmp = makeTmp()
const token = 'push-test-token-0123456789'
let nodes: TestCluster
let cluster: Cluster
let nginx: Nginx
const KEYS = 1500

/** Version v maps key-i to "v<v>-i": every read says which version it came from. */
async function buildVersion(v: number, records = KEYS): Promise<void> {
  const input = join(tmp.dir, `in-${v}.tsv`)
  await writeInput(
    input,
    'tsv',
    Array.from({ length: records }, (_, i) => [`key-${i}`, `v${v}-${i}`] as [string, string]),
  )
  await buildStore({
    inputs: [input],
    format: 'tsv',
    cluster,
    store: 'st',
    output: join(tmp.dir, 'www', `v${v}`),
    version: v,
    replication: 2,
    chunks: 2,
    workers: 1,
  })
}

const source = (v: number) => `${nginx.url}/v${v}`

/** One client for the whole file, as an application would keep it across pushes and rollbacks. */
let longLived: StoreClient | undefined

async function expectAllKeys(v: number): Promise<void> {
  longLived ??= await StoreClient.connect({ cluster, store: 'st', timeoutMs: 2000 })
  const fresh = await StoreClient.connect({ cluster, store: 'st', timeoutMs: 2000 })
  try {
    await expectKeysFrom(longLived, v)
    await expectKeysFrom(fresh, v)
  } finally {
    fresh.close()
  }
}

async function expectKeysFrom(client: StoreClient, v: number): Promise<void> {
  {
    const keys = Array.from({ length: KEYS }, (_, i) => `key-${i}`)
    const values = await client.getMany(keys)
    values.forEach((val, i) => expect(val?.toString()).toBe(`v${v}-${i}`))
    expect(await client.get('absent-key')).toBeUndefined()
    expect((await client.get('key-7'))?.toString()).toBe(`v${v}-7`)
  }
}

async function liveVersions(): Promise<(number | null)[]> {
  return (await clusterVersions(cluster, 'st', token)).map((n) => n.live)
}

beforeAll(async () => {
  nodes = await startCluster({ dir: tmp.dir, nodes: 3, partitionsPerNode: 3, token })
  cluster = await loadCluster(nodes.clusterFile)
  for (const v of [1, 2, 3, 4]) await buildVersion(v)
  await buildVersion(5, 60_000)
  nginx = await Nginx.launch({ root: join(tmp.dir, 'www') })
})

afterAll(async () => {
  longLived?.close()
  await nodes?.killAll()
  await nginx?.dispose()
  tmp.cleanup()
})

test('push v1 from nginx: every key reads back through the routing client', async () => {
  const r = await pushStore({ cluster, store: 'st', from: source(1), adminToken: token })
  expect(r.status).toBe('live')
  expect(r.nodes.map((n) => n.state)).toEqual(['live', 'live', 'live'])
  expect(await liveVersions()).toEqual([1, 1, 1])
  await expectAllKeys(1)
})

test('push v2, then roll the cluster back to v1', async () => {
  expect((await pushStore({ cluster, store: 'st', from: source(2), adminToken: token })).status).toBe('live')
  await expectAllKeys(2)
  const r = await rollbackCluster({ cluster, store: 'st', adminToken: token })
  expect(r.to).toBe(1)
  expect(await liveVersions()).toEqual([1, 1, 1])
  await expectAllKeys(1)
})

test('rollback --to an unknown version changes nothing', async () => {
  await expect(rollbackCluster({ cluster, store: 'st', to: 99, adminToken: token })).rejects.toMatchObject({ code: 'RO_NOT_FOUND' })
  expect(await liveVersions()).toEqual([1, 1, 1])
})

test('a push with a wrong admin token fails without side effects', async () => {
  await expect(pushStore({ cluster, store: 'st', from: source(3), adminToken: 'wrong-token' })).rejects.toMatchObject({
    code: 'RO_UNAUTHORIZED',
  })
  const versions = await clusterVersions(cluster, 'st', token)
  for (const n of versions) {
    expect(n.live).toBe(1)
    expect(n.versions.map((v) => v.version).sort()).toEqual([1, 2])
  }
})

test('a push of a version older than the live one is refused unless forced', async () => {
  expect((await pushStore({ cluster, store: 'st', from: source(2), adminToken: token })).status).toBe('live')
  await expect(pushStore({ cluster, store: 'st', from: source(1), adminToken: token })).rejects.toMatchObject({ code: 'RO_CONFLICT' })
  expect(await liveVersions()).toEqual([2, 2, 2])
})

test('two concurrent pushes: exactly one proceeds, one version is live everywhere', async () => {
  const push = () => pushStore({ cluster, store: 'st', from: source(3), adminToken: token, throttle: 64 << 10 })
  const results = await Promise.allSettled([push(), push()])
  const ok = results.filter((r) => r.status === 'fulfilled')
  const refused = results.filter((r) => r.status === 'rejected')
  expect(ok).toHaveLength(1)
  expect(refused).toHaveLength(1)
  expect(isStoreError((refused[0] as PromiseRejectedResult).reason, 'RO_CONFLICT')).toBe(true)
  expect((ok[0] as PromiseFulfilledResult<{ status: string }>).value.status).toBe('live')
  expect(await liveVersions()).toEqual([3, 3, 3])
  await expectAllKeys(3)
})

test('a node killed mid-fetch fails the push with no node swapped and no copy left', async () => {
  // Node 1 is killed once its fetch has bytes on disk: mid-fetch, whatever the machine's speed.
  let fetching!: () => void
  const midFetch = new Promise<void>((r) => (fetching = r))
  const pushing = pushStore({
    cluster,
    store: 'st',
    from: source(5),
    adminToken: token,
    throttle: 256 << 10,
    onEvent: (e) => {
      if (e.type === 'progress' && e.nodeId === 1 && e.bytesDone > 0 && e.bytesDone < e.bytesTotal) fetching()
    },
  })
  await midFetch
  await nodes.nodes[1]!.kill9()
  const r = await pushing
  expect(r.status).toBe('failed')
  nodes.nodes[1] = await nodes.nodes[1]!.restart()
  expect(await liveVersions()).toEqual([3, 3, 3])
  for (const n of await clusterVersions(cluster, 'st', token)) expect(n.versions.map((v) => v.version)).not.toContain(5)
  await expectAllKeys(3)
})

test('with a node down, every key is still readable through its replica (replication 2)', async () => {
  await nodes.nodes[2]!.kill9()
  try {
    await expectAllKeys(3)
  } finally {
    nodes.nodes[2] = await nodes.nodes[2]!.restart()
  }
})

test('a push to a cluster with a node down fails and changes nothing, unless --allow-failed-nodes', async () => {
  await nodes.nodes[0]!.kill9()
  try {
    const r = await pushStore({ cluster, store: 'st', from: source(4), adminToken: token })
    expect(r.status).toBe('failed')
    const ha = await pushStore({ cluster, store: 'st', from: source(4), adminToken: token, allowFailedNodes: 1 })
    expect(ha.status).toBe('live-with-failures')
    expect(ha.nodes.find((n) => n.nodeId === 0)!.state).toBe('stale')
  } finally {
    nodes.nodes[0] = await nodes.nodes[0]!.restart()
  }
  // Node 0 was down during the push. Restarting, it asks its peers, learns from their push
  // record that it missed version 4, and refuses reads of the store (503) until it has
  // fetched version 4 from the push's source and swapped to it: no
  // client reads version 3 from it, however fresh.
  const direct = await nodes.nodes[0]!.request('/stores/st/keys/key-2')
  expect(direct.status === 503 || direct.body.toString() === 'v4-2').toBe(true)
  await expectAllKeys(4)
  // Pushing again repairs it if it has not repaired itself yet.
  const repaired = await pushStore({ cluster, store: 'st', from: source(4), adminToken: token })
  expect(['live', 'already-live']).toContain(repaired.status)
  expect(await liveVersions()).toEqual([4, 4, 4])
  await expectAllKeys(4)
})
