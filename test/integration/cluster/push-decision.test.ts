import { existsSync } from 'node:fs'
import { buildVersion as buildRecords, numberedRecords } from '../../../testkit/cluster/build-version'
import { join } from 'node:path'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { ClusterAdmin } from '../../../client/cluster-admin'
import type { RemotePrepared } from '../../../client/node-client'
import { pushStore } from '../../../client/push/push-store'
import { StoreClient } from '../../../client/store-client'
import { clusterVersions } from '../../../client/versions'
import { CliProcess } from '../../../testkit/cluster/cli-process'
import { Nginx } from '../../../testkit/peers/nginx'
import { json, startCluster, type TestCluster } from '../../../testkit/cluster/node-process'
import { leftoversOf, waitUntil } from '../../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The push decision (docs/RELIABILITY.md §4) finished by the nodes when the pusher is gone.
 * The test plays a pusher that dies at chosen points (it takes a short lease, prepares the
 * nodes, writes some votes, then stops renewing): the nodes converge on one version by
 * themselves, a commit only when a majority voted it, and a lone node waits.
 */

jest.setTimeout(120_000)
const tmp = makeTmp('rostore-push-decision-')
const TOKEN = 'push-decision-token-0123456789'
const STORE = 'st'
const KEYS = 300
let nodes: TestCluster
let cluster: Cluster
let nginx: Nginx
let admin: ClusterAdmin

async function buildVersion(v: number, replication?: number): Promise<void> {
  await buildRecords({
    dir: tmp.dir,
    cluster,
    store: STORE,
    version: v,
    ...(replication === undefined ? {} : { replication }),
    records: numberedRecords(KEYS, (i) => `v${v}-${i}`),
    output: join(tmp.dir, 'www', `v${v}`),
  })
}

const dataDir = (id: number): string => join(tmp.dir, `data-${id}`)

/** A pusher that got as far as fetching and preparing every node, with a lease that it stops renewing. */
async function deadPusherPrepared(v: number, pushId: string, commitOn?: number, dieOn = admin.ids): Promise<RemotePrepared> {
  // Long enough for the fetches on a busy machine; cut to 1 s once the nodes are prepared.
  for (const id of admin.ids) await admin.node(id).lock(STORE, pushId, 60_000)
  for (const id of admin.ids) {
    const job = await admin.node(id).startFetch(STORE, { source: `${nginx.url}/v${v}`, version: v, lease: pushId })
    expect((await nodes.nodes[id]!.waitJob(job.id))['state']).toBe('succeeded')
  }
  const p: RemotePrepared = {
    pushId,
    kind: 'push',
    version: v,
    participants: [0, 1, 2],
    missed: [],
    source: `${nginx.url}/v${v}`,
    seq: Date.now(),
    fetched: true,
  }
  for (const id of admin.ids) await admin.node(id).prepare(STORE, p)
  if (commitOn !== undefined) expect((await admin.node(commitOn).vote(STORE, pushId, { vote: 'commit', version: v })).vote).toBe('commit')
  for (const id of dieOn) await admin.node(id).lock(STORE, pushId, 1000)
  return p
}

async function lives(): Promise<(number | null)[]> {
  return (await clusterVersions(cluster, STORE, TOKEN)).map((n) => n.live)
}

async function expectKeys(v: number): Promise<void> {
  const client = await StoreClient.connect({ cluster, store: STORE, timeoutMs: 5000 })
  try {
    const values = await client.getMany(Array.from({ length: KEYS }, (_, i) => `key-${i}`))
    expect(values.filter((val, i) => val?.toString() !== `v${v}-${i}`).length).toBe(0)
  } finally {
    client.close()
  }
}

beforeAll(async () => {
  nodes = await startCluster({ dir: tmp.dir, nodes: 3, partitionsPerNode: 3, token: TOKEN, extraArgs: ['--peer-check-grace-ms', '1000'] })
  cluster = await loadCluster(nodes.clusterFile)
  admin = new ClusterAdmin(cluster, TOKEN)
  for (const v of [1, 2, 3, 4, 5, 6]) await buildVersion(v)
  await buildVersion(7, 3)
  nginx = await Nginx.launch({ root: join(tmp.dir, 'www') })
  expect((await pushStore({ cluster, store: STORE, from: `${nginx.url}/v1`, adminToken: TOKEN })).status).toBe('live')
})

afterAll(async () => {
  admin?.close()
  await nodes?.killAll()
  await nginx?.dispose()
  tmp.cleanup()
})

test('the pusher dies after one commit vote: the nodes finish the commit and all serve the new version', async () => {
  await deadPusherPrepared(2, 'push-dies-after-one-vote', 0)
  // No operator action: the lease lapses, the nodes read each other's votes and commit.
  expect(await waitUntil(async () => (await lives()).every((v) => v === 2), 30_000, 100)).toBe(true)
  await expectKeys(2)
  for (const id of admin.ids) {
    const d = await admin.node(id).decisions(STORE)
    expect({ prepared: d.prepared, last: d.decisions.at(-1)?.outcome }).toEqual({ prepared: null, last: 'commit' })
  }
  // A late write of the other outcome is refused: what the node holds stands.
  const late = await nodes.nodes[1]!.admin('POST', `/stores/${STORE}/decisions/push-dies-after-one-vote`, {
    vote: 'abort',
    version: 2,
    outcome: 'abort',
  })
  expect(late.status).toBe(409)
})

test('the pusher dies before any vote: the nodes abort and remove what was fetched', async () => {
  await deadPusherPrepared(3, 'push-dies-before-voting')
  const shown = await CliProcess.run(['versions', '--cluster', nodes.clusterFile, '--store', STORE], { token: TOKEN })
  expect(shown.stdout).toMatch(/push push-dies-before-voting of version 3 prepared/)
  expect(await waitUntil(async () => admin.ids.every((id) => !existsSync(join(dataDir(id), STORE, 'version-3'))), 30_000, 100)).toBe(true)
  expect(await lives()).toEqual([2, 2, 2])
  for (const id of admin.ids) {
    expect((await admin.node(id).decisions(STORE)).decisions.at(-1)).toMatchObject({ pushId: 'push-dies-before-voting', outcome: 'abort' })
    expect(leftoversOf(join(dataDir(id), STORE))).toEqual([])
  }
  await expectKeys(2)
})

test('blocking case: the commit voter and a second node die with the pusher; the lone node waits, then the majority decides', async () => {
  // The pusher dies with nodes 0 and 1 (their leases go with them), then node 2's lapses.
  await deadPusherPrepared(4, 'push-blocking-case', 0, [])
  await nodes.nodes[0]!.kill9()
  await nodes.nodes[1]!.kill9()
  await admin.node(2).lock(STORE, 'push-blocking-case', 1000)
  // Node 2 alone cannot know whether a majority committed: it keeps serving version 2.
  const alone = nodes.nodes[2]!
  await alone.waitForEvent((e) => e['event'] === 'push-resolving' && e['pushId'] === 'push-blocking-case', 20_000)
  const waiting = json<{ prepared: { pushId: string } | null; abandoned: boolean }>(await alone.admin('GET', `/stores/${STORE}/decision`))
  expect({ prepared: waiting.prepared?.pushId, abandoned: waiting.abandoned }).toEqual({ prepared: 'push-blocking-case', abandoned: true })
  expect(json(await alone.request(`/stores/${STORE}`))['version']).toBe(2)
  // Node 1 comes back: nodes 1 and 2 are a majority, neither voted commit: abort.
  nodes.nodes[1] = await nodes.nodes[1]!.restart()
  expect(await waitUntil(async () => (await admin.node(2).decisions(STORE)).prepared === null, 30_000, 100)).toBe(true)
  // Node 0 held a commit vote, but commit never had a majority: it learns abort and never swaps.
  nodes.nodes[0] = await nodes.nodes[0]!.restart()
  expect(await waitUntil(async () => (await admin.node(0).decisions(STORE)).prepared === null, 30_000, 100)).toBe(true)
  expect((await admin.node(0).decisions(STORE)).decisions.at(-1)).toMatchObject({ vote: 'commit', outcome: 'abort' })
  expect(await lives()).toEqual([2, 2, 2])
  for (const id of admin.ids) expect(existsSync(join(dataDir(id), STORE, 'version-4'))).toBe(false)
  await expectKeys(2)
})

test('a minority of the layout holds the version: its commit vote decides nothing; the others vote abort and it drops the version', async () => {
  // A pusher that fetched and prepared node 0 only (nodes 1 and 2 missed it), voted commit there, and died.
  const pushId = 'push-minority'
  await admin.node(0).lock(STORE, pushId, 60_000)
  const job = await admin.node(0).startFetch(STORE, { source: `${nginx.url}/v5`, version: 5, lease: pushId })
  expect((await nodes.nodes[0]!.waitJob(job.id))['state']).toBe('succeeded')
  const p: RemotePrepared = { pushId, kind: 'push', version: 5, participants: [0], missed: [1, 2], seq: Date.now(), fetched: true }
  await admin.node(0).prepare(STORE, p)
  expect((await admin.node(0).vote(STORE, pushId, { vote: 'commit', version: 5 })).vote).toBe('commit')
  await admin.node(0).lock(STORE, pushId, 1000)
  // One commit vote of three layout nodes is no majority: node 0 asks nodes 1 and 2, which vote abort.
  expect(await waitUntil(async () => (await admin.node(0).decisions(STORE)).prepared === null, 30_000, 100)).toBe(true)
  expect((await admin.node(0).decisions(STORE)).decisions.at(-1)).toMatchObject({ pushId, vote: 'commit', outcome: 'abort' })
  for (const id of [1, 2]) expect((await admin.node(id).decisions(STORE)).decisions.at(-1)).toMatchObject({ pushId, vote: 'abort' })
  expect(await lives()).toEqual([2, 2, 2])
  expect(existsSync(join(dataDir(0), STORE, 'version-5'))).toBe(false)
  await expectKeys(2)
})

test('a node down during the decision learns it from the majority when it is back', async () => {
  const pushId = 'push-node-down'
  await deadPusherPrepared(6, pushId, undefined, [])
  await nodes.nodes[2]!.kill9()
  // The pusher writes commit on nodes 0 and 1 (a majority of the layout), then dies.
  for (const id of [0, 1]) expect((await admin.node(id).vote(STORE, pushId, { vote: 'commit', version: 6 })).vote).toBe('commit')
  for (const id of [0, 1]) await admin.node(id).lock(STORE, pushId, 1000)
  expect(await waitUntil(async () => (await lives()).slice(0, 2).every((v) => v === 6), 30_000, 100)).toBe(true)
  // Node 2 restarts prepared and undecided: it asks its peers and follows them.
  nodes.nodes[2] = await nodes.nodes[2]!.restart()
  expect(await waitUntil(async () => (await lives()).every((v) => v === 6), 30_000, 100)).toBe(true)
  expect((await admin.node(2).decisions(STORE)).decisions.at(-1)).toMatchObject({ pushId, outcome: 'commit' })
  await expectKeys(6)
})

test('a push that only a minority of the layout could fetch is refused before any decision', async () => {
  // Replication 3 on 3 nodes allows two failed nodes, but one node is no majority of the layout.
  await nodes.nodes[1]!.kill9()
  await nodes.nodes[2]!.kill9()
  try {
    const r = await pushStore({ cluster, store: STORE, from: `${nginx.url}/v7`, adminToken: TOKEN, allowFailedNodes: 2 })
    expect(r.status).toBe('failed')
    expect(json(await nodes.nodes[0]!.request(`/stores/${STORE}`))['version']).toBe(6)
    expect(existsSync(join(dataDir(0), STORE, 'version-7'))).toBe(false)
    expect((await admin.node(0).decisions(STORE)).prepared).toBeNull()
  } finally {
    nodes.nodes[1] = await nodes.nodes[1]!.restart()
    nodes.nodes[2] = await nodes.nodes[2]!.restart()
  }
})

test('decision routes need the admin token and refuse malformed fields', async () => {
  const n = nodes.nodes[2]!
  expect((await n.request(`/admin/stores/${STORE}/decision`)).status).toBe(401)
  const cases: [string, string, object][] = [
    ['POST', `/stores/${STORE}/prepare`, { pushId: 'p 1', kind: 'push', version: 2, participants: [0], seq: 1, fetched: false }],
    ['POST', `/stores/${STORE}/prepare`, { pushId: 'p1', kind: 'swap', version: 2, participants: [0], seq: 1, fetched: false }],
    ['POST', `/stores/${STORE}/prepare`, { pushId: 'p1', kind: 'push', version: 0, participants: [0], seq: 1, fetched: false }],
    ['POST', `/stores/${STORE}/prepare`, { pushId: 'p1', kind: 'push', version: 2, participants: [], seq: 1, fetched: false }],
    ['POST', `/stores/${STORE}/prepare`, { pushId: 'p1', kind: 'push', version: 2, participants: [0], seq: 1, fetched: false, extra: 1 }],
    ['POST', `/stores/${STORE}/decisions/p1`, { vote: 'maybe', version: 2 }],
    ['POST', `/stores/${STORE}/decisions/p1`, { vote: 'commit', version: -2 }],
    ['GET', `/stores/${STORE}/decisions/${'x'.repeat(129)}`, {}],
    ['GET', `/stores/..%2F/decision`, {}],
  ]
  for (const [method, path, body] of cases) {
    const r = await n.admin(method, path, method === 'GET' ? undefined : body)
    expect({ path, status: r.status }).toEqual({ path, status: 400 })
  }
})
