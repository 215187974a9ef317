import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { clusterLayout, loadCluster, type Cluster } from '../../../cluster/cluster'
import { cliPath } from '../../../common/paths'
import { pushStore } from '../../../client/push/push-store'
import { planPush } from '../../../client/push/plan'
import { rollbackCluster } from '../../../client/push/rollback'
import { StoreClient } from '../../../client/store-client'
import { clusterVersions } from '../../../client/versions'
import { json, request, startClusterFromFile, type TestCluster } from '../../../testkit/cluster/node-process'
import { buildKeys, nodePorts, writeLayoutFile } from '../../../testkit/cluster/layout-files'
import { makeTmp } from '../../../testkit/stores/tmp'
import { VersionReader } from '../../../testkit/cluster/version-reader'

/**
 * Growing and shrinking the cluster with real node processes: 3 nodes grow to 5
 * (a push of a build for the new layout), the grow is rolled back and pushed again, then
 * 5 shrink to 4, all under continuous reads from several clients (HTTP with the current
 * file, HTTP with an old file that lists only the first three nodes, RESP). Every read
 * must succeed, and every answer must be the value of its key in one version: a multi-get
 * never mixes versions.
 */
jest.setTimeout(300_000)
const tmp = makeTmp('rostore-layout-')
const TOKEN = 'change-layout-token-0123456789'
const STORE = 'st'
const KEYS = 20_000
const keyOf = (i: number): string => `key-${i}`
let nodes: TestCluster | undefined

const build = (cluster: Cluster, v: number): Promise<string> =>
  buildKeys(tmp.dir, cluster, { store: STORE, version: v, keys: KEYS, keyOf, chunks: 2 })

let readers: VersionReader[] = []
let all: Cluster
let fileA: Cluster
let fileB: Cluster
let fileC: Cluster
let oldFile: Cluster
let builds: Record<number, string> = {}

async function live(cluster: Cluster): Promise<(number | null)[]> {
  return (await clusterVersions(cluster, STORE, TOKEN)).map((n) => n.live)
}

/** Every reader reads on, until each routes by `version` and has read some more after. */
async function readersFollow(version: number): Promise<void> {
  for (const r of readers) {
    for (let i = 0; i < 200 && r.client.version !== version; i++) await r.more(2)
    expect({ reader: r.name, version: r.client.version }).toEqual({ reader: r.name, version })
    await r.more(20)
  }
}

beforeAll(async () => {
  const addrs = await nodePorts(5)
  // Every node's file lists all five addresses; the layouts differ.
  const pathA = await writeLayoutFile(tmp.dir, 'a.json', addrs, { owners: 3, partitions: 12 })
  const pathB = await writeLayoutFile(tmp.dir, 'b.json', addrs, { owners: 5, partitions: 15 })
  const pathC = await writeLayoutFile(tmp.dir, 'c.json', addrs, { owners: 4, partitions: 12 })
  const pathOld = await writeLayoutFile(tmp.dir, 'old.json', addrs, { owners: 3, partitions: 12, listed: [0, 1, 2] })
  fileA = await loadCluster(pathA)
  fileB = await loadCluster(pathB)
  fileC = await loadCluster(pathC)
  oldFile = await loadCluster(pathOld)
  all = fileB
  builds = { 1: await build(fileA, 1), 2: await build(fileB, 2), 3: await build(fileC, 3) }
  // Nodes 0-2 start with the file of the first layout, nodes 3 and 4 (new machines) with
  // the next one: each node routes by the layout of its live version, not by its file.
  const first = await startClusterFromFile(pathA, { ids: [0, 1, 2], dataDir: (id) => join(tmp.dir, `data-${id}`), token: TOKEN })
  nodes = first
  // The new nodes run two serving workers each: the supervisor owns the versions, the
  // workers route by the live version's layout too.
  const joined = await startClusterFromFile(pathB, {
    ids: [3, 4],
    dataDir: (id) => join(tmp.dir, `data-${id}`),
    token: TOKEN,
    extraArgs: ['--workers', '2'],
  })
  nodes = {
    ...first,
    nodes: [...first.nodes, ...joined.nodes],
    killAll: async () => void (await Promise.all([first.killAll(), joined.killAll()])),
  }
  expect((await pushStore({ cluster: fileA, store: STORE, from: builds[1]!, adminToken: TOKEN })).status).toBe('live')
  expect(await live(all)).toEqual([1, 1, 1, null, null])
  readers = [
    new VersionReader('http', await StoreClient.connect({ cluster: fileA, store: STORE, timeoutMs: 10_000 }), 1, KEYS, keyOf),
    new VersionReader('http-old-file', await StoreClient.connect({ cluster: oldFile, store: STORE, timeoutMs: 10_000 }), 2, KEYS, keyOf),
    new VersionReader(
      'resp',
      await StoreClient.connect({ cluster: fileA, store: STORE, timeoutMs: 10_000, transport: 'resp' }),
      3,
      KEYS,
      keyOf,
    ),
  ]
  for (const r of readers) r.start()
  for (const r of readers) await r.more(20)
})

afterAll(async () => {
  for (const r of readers) {
    await r.stop()
    r.client.close()
  }
  await nodes?.killAll()
  tmp.cleanup()
})

test('a node that joined empty answers "not serving", and the readers read version 1 from the first three nodes', async () => {
  for (const id of [3, 4]) {
    const n = all.nodes.find((x) => x.id === id)!
    const r = await request(`http://${n.host}:${n.port}/stores/${STORE}/keys/${keyOf(1)}`)
    expect({ id, status: r.status, code: json<{ error: { code: string } }>(r).error.code }).toEqual({
      id,
      status: 421,
      code: 'RO_NOT_SERVING',
    })
  }
  for (const r of readers)
    expect({ reader: r.name, version: r.client.version, failed: r.failed, wrong: r.wrong }).toEqual({
      reader: r.name,
      version: 1,
      failed: [],
      wrong: [],
    })
  const fresh = await StoreClient.connect({ cluster: all, store: STORE, timeoutMs: 10_000 })
  try {
    expect(fresh.version).toBe(1)
    expect((await fresh.get(keyOf(5)))?.toString()).toBe(`v1:${keyOf(5)}`)
  } finally {
    fresh.close()
  }
})

test('rostore push --dry-run prints per node its role, partitions and bytes to fetch, and changes nothing', async () => {
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      [cliPath(), 'push', '--cluster', join(tmp.dir, 'b.json'), '--store', STORE, '--from', builds[2]!, '--dry-run'],
      { env: { ...process.env, ROSTORE_ADMIN_TOKEN: TOKEN }, timeout: 60_000 },
      (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out)),
    ),
  )
  const plan = await planPush({ cluster: fileB, store: STORE, from: builds[2]!, adminToken: TOKEN })
  expect(stdout).toContain(`push of ${STORE} version 2 from ${builds[2]!} (a new cluster layout):`)
  expect(stdout).toContain(
    `node 0 (live 1): stays: partitions [0,3,6,9] -> [0,5,10], fetches ${plan.nodes[0]!.files} files, ${plan.nodes[0]!.fetchBytes} bytes (`,
  )
  expect(stdout).toContain(
    `node 4 (live none): joins: partitions [] -> [4,9,14], fetches ${plan.nodes[4]!.files} files, ${plan.nodes[4]!.fetchBytes} bytes (`,
  )
  expect(await live(all)).toEqual([1, 1, 1, null, null])
})

test('grow 3 -> 5: the dry-run plan, then a push fetching exactly the planned bytes per node, under reads', async () => {
  const plan = await planPush({ cluster: fileB, store: STORE, from: builds[2]!, adminToken: TOKEN })
  expect(plan.layoutChange).toBe(true)
  expect(plan.nodes.map((n) => [n.nodeId, n.role])).toEqual([
    [0, 'stays'],
    [1, 'stays'],
    [2, 'stays'],
    [3, 'joins'],
    [4, 'joins'],
  ])
  for (const n of plan.nodes) {
    expect(n.partitionsAfter).toEqual(clusterLayout(fileB).find((l) => l.id === n.nodeId)!.partitions)
    expect(n.fetchBytes).toBeGreaterThan(0)
  }
  expect(plan.nodes[3]!.partitionsBefore).toEqual([])
  const r = await pushStore({ cluster: fileB, store: STORE, from: builds[2]!, adminToken: TOKEN })
  expect(r.status).toBe('live')
  expect(r.nodes.map((n) => [n.nodeId, n.state, n.fetchedBytes])).toEqual(plan.nodes.map((n) => [n.nodeId, 'live', n.fetchBytes]))
  expect(await live(all)).toEqual([2, 2, 2, 2, 2])
  await readersFollow(2)
})

test('a client started with an old cluster file (three nodes) finds the new layout and the two new nodes', async () => {
  const client = await StoreClient.connect({ cluster: oldFile, store: STORE, timeoutMs: 10_000 })
  try {
    expect(client.version).toBe(2)
    expect(client.info.layout.map((n) => n.id)).toEqual([0, 1, 2, 3, 4])
    const onNew = Array.from({ length: 2000 }, (_, i) => i).filter((i) => client.replicasOf(keyOf(i)).every((id) => id >= 3))
    expect(onNew.length).toBeGreaterThan(10)
    const values = await client.getMany(onNew.map(keyOf))
    expect(values.map((v) => v?.toString())).toEqual(onNew.map((i) => `v2:${keyOf(i)}`))
    // Reached on the new nodes themselves: nothing failed over.
    expect(client.stats().failovers).toBe(0)
  } finally {
    client.close()
  }
})

test('rollback of the grow: refused with a file missing the new nodes; with the new file, routing goes back to the first three nodes and the new ones keep version 2 as a stale backup', async () => {
  // The old file lists nodes 0-2 only: nodes 3 and 4 would go on serving version 2.
  await expect(rollbackCluster({ cluster: oldFile, store: STORE, adminToken: TOKEN })).rejects.toThrow(
    /nothing changed: nodes 3, 4 serve version 2 and are not in this cluster file.*use the cluster file of version 2/,
  )
  expect(await live(all)).toEqual([2, 2, 2, 2, 2])
  // The new file (the grow's) is enough: version 1's own layout says which nodes go back.
  const r = await rollbackCluster({ cluster: fileB, store: STORE, adminToken: TOKEN })
  expect(r.to).toBe(1)
  expect(r.backups).toEqual([3, 4])
  expect(await live(all)).toEqual([1, 1, 1, 2, 2])
  await readersFollow(1)
  const fresh = await StoreClient.connect({ cluster: all, store: STORE, timeoutMs: 10_000 })
  fresh.close()
  expect(fresh.version).toBe(1)
  expect(fresh.info.layout.map((n) => n.id)).toEqual([0, 1, 2])
})

test('push the grow again (nothing to fetch), then shrink 5 -> 4: node 4 leaves and keeps a backup', async () => {
  const again = await planPush({ cluster: fileB, store: STORE, from: builds[2]!, adminToken: TOKEN })
  expect(again.nodes.map((n) => n.fetchBytes)).toEqual([0, 0, 0, 0, 0])
  expect((await pushStore({ cluster: fileB, store: STORE, from: builds[2]!, adminToken: TOKEN })).status).toBe('live')
  await readersFollow(2)

  const plan = await planPush({ cluster: fileC, store: STORE, from: builds[3]!, adminToken: TOKEN })
  expect(plan.nodes.map((n) => [n.nodeId, n.role])).toEqual([
    [0, 'stays'],
    [1, 'stays'],
    [2, 'stays'],
    [3, 'stays'],
    [4, 'leaves'],
  ])
  expect(plan.nodes[4]!.fetchBytes).toBe(0)
  const r = await pushStore({ cluster: fileC, store: STORE, from: builds[3]!, adminToken: TOKEN })
  expect(r.status).toBe('live')
  expect(r.nodes.map((n) => [n.nodeId, n.state, n.fetchedBytes])).toEqual([
    ...plan.nodes.slice(0, 4).map((n) => [n.nodeId, 'live', n.fetchBytes]),
    [4, 'backup', undefined],
  ])
  expect(await live(all)).toEqual([3, 3, 3, 3, 2])
  await readersFollow(3)
})

test('through every change: zero failed reads, zero wrong or mixed values, every version seen by every reader', async () => {
  for (const r of readers) await r.stop()
  for (const r of readers) {
    expect({ reader: r.name, failed: r.failed.slice(0, 5), wrong: r.wrong.slice(0, 5) }).toEqual({ reader: r.name, failed: [], wrong: [] })
    expect({ reader: r.name, seen: [...r.seen].sort() }).toEqual({ reader: r.name, seen: [1, 2, 3] })
    expect(r.reads).toBeGreaterThan(200)
    process.stdout.write(`change-layout: reader ${r.name}: ${r.reads} reads, ${r.client.stats().failovers} failovers\n`)
  }
})
