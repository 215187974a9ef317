import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { clusterLayout, loadCluster, type Cluster } from '../../../cluster/cluster'
import { buildRing, routeHash } from '../../../cluster/routing'
import { cliPath } from '../../../common/paths'
import { pushStore } from '../../../client/push/push-store'
import { planRebalance, rebalanceStore } from '../../../client/push/rebalance'
import { rollbackCluster } from '../../../client/push/rollback'
import { StoreClient } from '../../../client/store-client'
import { clusterVersions } from '../../../client/versions'
import { NodeClient } from '../../../client/node-client'
import { startClusterFromFile, type NodeProcess, type TestCluster } from '../../../testkit/cluster/node-process'
import { buildKeys, nodePorts, writeLayoutFile } from '../../../testkit/cluster/layout-files'
import { makeTmp } from '../../../testkit/stores/tmp'
import { VersionReader } from '../../../testkit/cluster/version-reader'

/**
 * Format 2 across layout changes, with real node processes under continuous reads: a
 * build for 3 nodes is pushed, rebalanced to 5 then to 4 nodes without a build (each node
 * fetching only the partitions it gains, from its peers), rolled back with the current
 * cluster file and refused with a file that misses serving nodes; a node that loses its
 * disk takes its partitions from its peers with the build output deleted. Every read
 * must succeed with the value of its key in one version.
 */
jest.setTimeout(300_000)
const tmp = makeTmp('rostore-rebalance-')
const TOKEN = 'rebalance-token-0123456789abcdef'
const STORE = 'st'
const KEYS = 20_000
const PARTITIONS = 12
const keyOf = (i: number): string => `key-${i}`
let nodes: TestCluster | undefined

let readers: VersionReader[] = []
let three: Cluster
let five: Cluster
let four: Cluster
let oldFile: Cluster
let output = ''

async function live(cluster: Cluster): Promise<(number | null)[]> {
  return (await clusterVersions(cluster, STORE, TOKEN)).map((n) => n.live)
}

async function readersFollow(version: number): Promise<void> {
  for (const r of readers) {
    for (let i = 0; i < 400 && r.client.version !== version; i++) await r.more(2)
    expect({ reader: r.name, version: r.client.version }).toEqual({ reader: r.name, version })
    await r.more(10)
  }
}

const rostore = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(process.execPath, [cliPath(), ...args], { timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })

beforeAll(async () => {
  const addrs = await nodePorts(5)
  // Every file lists all five addresses (the others address only): one ring of 12 partitions.
  three = await loadCluster(await writeLayoutFile(tmp.dir, 'three.json', addrs, { owners: 3, partitions: PARTITIONS }))
  five = await loadCluster(await writeLayoutFile(tmp.dir, 'five.json', addrs, { owners: 5, partitions: PARTITIONS }))
  four = await loadCluster(await writeLayoutFile(tmp.dir, 'four.json', addrs, { owners: 4, partitions: PARTITIONS }))
  oldFile = await loadCluster(await writeLayoutFile(tmp.dir, 'old.json', addrs, { owners: 3, partitions: PARTITIONS, listed: [0, 1, 2] }))
  output = await buildKeys(tmp.dir, three, { store: STORE, version: 1, keys: KEYS, keyOf, chunks: 2 })
  nodes = await startClusterFromFile(join(tmp.dir, 'five.json'), { dataDir: (id) => join(tmp.dir, `data-${id}`), token: TOKEN })
  const pushed = await pushStore({ cluster: three, store: STORE, from: output, adminToken: TOKEN })
  expect(pushed.status).toBe('live')
  expect(await live(five)).toEqual([1, 1, 1, null, null])
  readers = [
    new VersionReader('http', await StoreClient.connect({ cluster: three, store: STORE, timeoutMs: 10_000 }), 1, KEYS, keyOf),
    new VersionReader('http-old-file', await StoreClient.connect({ cluster: oldFile, store: STORE, timeoutMs: 10_000 }), 2, KEYS, keyOf),
    new VersionReader(
      'resp',
      await StoreClient.connect({ cluster: three, store: STORE, timeoutMs: 10_000, transport: 'resp' }),
      3,
      KEYS,
      keyOf,
    ),
  ]
  for (const r of readers) r.start()
  for (const r of readers) await r.more(10)
})

afterAll(async () => {
  for (const r of readers) {
    await r.stop()
    r.client.close()
  }
  await nodes?.killAll()
  tmp.cleanup()
})

test('rebalance 3 -> 5 --dry-run prints per node the partitions gained and lost and the bytes to move, and changes nothing', async () => {
  const { plan } = await planRebalance({ cluster: five, store: STORE, adminToken: TOKEN })
  expect(plan.from).toBe(1)
  expect(plan.to).toBe(2)
  // The new nodes gain partitions and lose none; every gained partition is counted once per gaining node.
  expect(plan.nodes.find((n) => n.nodeId === 3)!.lost).toEqual([])
  expect(plan.nodes.find((n) => n.nodeId === 3)!.gained.length).toBeGreaterThan(0)
  expect(plan.bytes).toBe(plan.nodes.reduce((a, n) => a + n.bytes, 0))
  const r = await rostore(['rebalance', '--cluster', join(tmp.dir, 'five.json'), '--store', STORE, '--admin-token', TOKEN, '--dry-run'])
  expect(r.stderr).toBe('')
  expect(r.code).toBe(0)
  expect(r.stdout).toContain('version 1 becomes version 2')
  expect(r.stdout).toMatch(/node 4: gains \[[0-9,]+\], loses \[\], fetches \d+ bytes/)
  expect(await live(five)).toEqual([1, 1, 1, null, null])
})

test('rebalance 3 -> 5 under reads: each node fetches exactly the bytes of the partitions it gains, from peers', async () => {
  // The build output is gone: a rebalance needs no build.
  await rm(output, { recursive: true, force: true })
  const { plan } = await planRebalance({ cluster: five, store: STORE, adminToken: TOKEN })
  const r = await rebalanceStore({ cluster: five, store: STORE, adminToken: TOKEN })
  expect({ status: r.status, errors: r.nodes.filter((n) => n.error) }).toEqual({ status: 'live', errors: [] })
  expect(r.version).toBe(2)
  for (const n of plan.nodes) {
    const outcome = r.nodes.find((o) => o.nodeId === n.nodeId)!
    expect({ node: n.nodeId, state: outcome.state, bytes: outcome.fetchedBytes ?? 0 }).toEqual({
      node: n.nodeId,
      state: 'live',
      bytes: n.bytes,
    })
  }
  expect(await live(five)).toEqual([2, 2, 2, 2, 2])
  await readersFollow(2)
})

test('rebalance 5 -> 4: node 4 leaves and keeps version 2 as a stale backup; readers follow', async () => {
  const r = await rebalanceStore({ cluster: four, store: STORE, adminToken: TOKEN })
  expect(r.status).toBe('live')
  expect(r.nodes.map((n) => [n.nodeId, n.state])).toEqual([
    [0, 'live'],
    [1, 'live'],
    [2, 'live'],
    [3, 'live'],
    [4, 'backup'],
  ])
  expect(await live(five)).toEqual([3, 3, 3, 3, 2])
  await readersFollow(3)
})

test('rollback with a cluster file that misses serving nodes is refused, naming the file to use; nothing changes', async () => {
  await expect(rollbackCluster({ cluster: oldFile, store: STORE, adminToken: TOKEN })).rejects.toThrow(
    /nodes 3 serve version 3 and are not in this cluster file.*use the cluster file of version 3/,
  )
  expect(await live(five)).toEqual([3, 3, 3, 3, 2])
})

test('rollback with the current cluster file goes back to version 2 on the five nodes of its layout', async () => {
  const r = await rollbackCluster({ cluster: four, store: STORE, adminToken: TOKEN })
  expect(r.to).toBe(2)
  expect(await live(five)).toEqual([2, 2, 2, 2, 2])
  await readersFollow(2)
  // And again, to the first push's three nodes: the two that joined keep version 2 as a backup.
  const back = await rollbackCluster({ cluster: five, store: STORE, adminToken: TOKEN })
  expect(back.to).toBe(1)
  expect(back.backups).toEqual([3, 4])
  expect(await live(five)).toEqual([1, 1, 1, 2, 2])
  await readersFollow(1)
})

test('a node that lost its disk takes its partitions from its peers (the build output is deleted) and serves every key it should', async () => {
  const victim = nodes!.nodes.find((n) => n.opts.nodeId === 1) as NodeProcess
  await victim.kill9()
  await rm(join(tmp.dir, 'data-1'), { recursive: true, force: true })
  const restarted = await victim.restart()
  nodes!.nodes[nodes!.nodes.indexOf(victim)] = restarted
  await restarted.waitForEvent((e) => e['event'] === 'repaired' && e['store'] === STORE, 120_000)
  // Every key node 1 holds in version 1's layout, read through node 1 alone.
  const ring = buildRing(clusterLayout(three))
  const mine = Array.from({ length: KEYS }, (_, i) => keyOf(i)).filter((k) =>
    routeHash(ring, createHash('md5').update(k).digest(), 2).includes(1),
  )
  expect(mine.length).toBeGreaterThan(KEYS / 2)
  const node = new NodeClient(
    three.nodes.find((n) => n.id === 1)!,
    {},
  )
  try {
    expect((await node.storeInfo(STORE)).version).toBe(1)
    let found = 0
    for (let i = 0; i < mine.length; i += 500) {
      const keys = mine.slice(i, i + 500)
      const { values, version } = await node.getMany(STORE, keys)
      expect(version).toBe(1)
      values.forEach((v, j) => {
        expect(v?.toString()).toBe(`v1:${keys[j]}`)
        found++
      })
    }
    expect(found).toBe(mine.length)
  } finally {
    node.close()
  }
})

test('through every change: zero failed reads, zero wrong or mixed values', async () => {
  for (const r of readers) await r.stop()
  for (const r of readers) {
    expect({ reader: r.name, failed: r.failed.slice(0, 5), wrong: r.wrong.slice(0, 5) }).toEqual({ reader: r.name, failed: [], wrong: [] })
    // Versions 2 and 3 are rebalances: the data (values "v1:...") of the only build.
    expect({ reader: r.name, seen: [...r.seen] }).toEqual({ reader: r.name, seen: [1] })
    expect(r.reads).toBeGreaterThan(50)
  }
})
