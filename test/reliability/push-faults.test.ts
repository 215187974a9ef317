import { cpSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { buildVersion as buildRecords, numberedRecords } from '../../testkit/cluster/build-version'
import { join } from 'node:path'
import { loadCluster, type Cluster } from '../../cluster/cluster'
import { pushStore, type PushEvent, type PushResult } from '../../client/push/push-store'
import { StoreClient } from '../../client/store-client'
import { clusterVersions } from '../../client/versions'
import { checksumFile } from '../../formats/store/chunk/checksum'
import { Nginx } from '../../testkit/peers/nginx'
import { freePort, json, NodeProcess, writeClusterFile } from '../../testkit/cluster/node-process'
import { leftoversOf, reportFigures, sleep, waitUntil } from '../../testkit/cluster/reliability-kit'
import { AnswerDroppingProxy } from '../../testkit/net/reliability-proxy'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * Promise 4 of docs/RELIABILITY.md: pushes are all-or-nothing across a 3-node cluster
 * (replication 2) with faults injected: a node down, a node whose fetch fails (its
 * allow-list refuses the source; what it fetched does not verify), a node whose swap fails
 * after the push was decided (it dies before its pointer flip; its answers are lost; it
 * dies after the flip: it finishes the swap itself), and a source that dies mid-push (and
 * comes back, or not). After each, every node serves the same version, and every key reads
 * back that version's value through the routing client. test/integration/cluster/push.test.ts covers the plain cases (node down,
 * node killed mid-fetch, concurrent pushes); this adds the other faults.
 */

jest.setTimeout(90_000)
const tmp = makeTmp('rostore-push-faults-')
const TOKEN = 'push-faults-token-0123456789'
const STORE = 'st'
const KEYS = 1200
const BIG_KEYS = 60_000
let cluster: Cluster
let clusterFile: string
let nginx: Nginx
let proxy: AnswerDroppingProxy
const nodes: NodeProcess[] = []
const figures = {
  pushes: 0,
  faultsInjected: 0,
  failedAsExpected: 0,
  wentLive: 0,
  consistencyChecks: 0,
  keysRead: 0,
  decidedThenFinishedByNodes: 0,
  faults: [] as string[],
}

const www = (): string => join(tmp.dir, 'www')
const dataDir = (id: number): string => join(tmp.dir, `data-${id}`)
const source = (name: string): string => `${nginx.url}${name}`

async function buildVersion(v: number, keys = KEYS, name = `v${v}`): Promise<void> {
  await buildRecords({
    dir: tmp.dir,
    cluster,
    store: STORE,
    version: v,
    records: numberedRecords(keys, (i) => `v${v}-${i}`),
    output: join(www(), name),
    // The faults are placed in node directories' files (format 1); format 2's sources and
    // peers have their own fault tests (peer-fetch, rebalance).
    layout: 'nodes',
  })
}

let realPort0 = 0
async function startNode(id: number, extra: { env?: Record<string, string>; args?: string[] } = {}): Promise<NodeProcess> {
  const n = await NodeProcess.start({
    clusterFile,
    nodeId: id,
    dataDir: dataDir(id),
    token: TOKEN,
    keepVersions: 10,
    // Node 0 listens behind the proxy, which holds node 0's address in cluster.json.
    ...(id === 0 ? { port: realPort0 } : {}),
    env: extra.env ?? {},
    extraArgs: extra.args ?? [],
  })
  nodes[id] = n
  return n
}

async function push(from: string, opts: { throttle?: number; onEvent?: (e: PushEvent) => void } = {}): Promise<PushResult> {
  figures.pushes++
  return pushStore({ cluster, store: STORE, from, adminToken: TOKEN, pollMs: 50, ...opts })
}

/** A push, and a promise settled once a node has reported fetched bytes (the moment to cut the source). */
function pushFetching(from: string): { pushing: Promise<PushResult>; fetching: Promise<void> } {
  let fetched!: () => void
  const fetching = new Promise<void>((resolve) => (fetched = resolve))
  const pushing = push(from, { onEvent: (e) => e.type === 'progress' && e.bytesDone > 0 && fetched() })
  return { pushing, fetching }
}

/** Every node up, serving `v`, nothing half-done on disk, every key of v through the client. */
async function expectConsistent(v: number, keys = KEYS): Promise<void> {
  figures.consistencyChecks++
  const lives = (await clusterVersions(cluster, STORE, TOKEN)).map((n) => n.live)
  expect(lives).toEqual([v, v, v])
  for (const n of nodes) {
    const r = await n.request(`/stores/${STORE}`)
    expect({ status: r.status, version: json(r)['version'] }).toEqual({ status: 200, version: v })
  }
  for (let id = 0; id < 3; id++) expect(await waitUntil(() => leftoversOf(join(dataDir(id), STORE)).length === 0)).toBe(true)
  const client = await StoreClient.connect({ cluster, store: STORE, timeoutMs: 5000 })
  try {
    const names = Array.from({ length: keys }, (_, i) => `key-${i}`)
    const values = await client.getMany(names)
    const wrong = values
      .map((val, i) => (val?.toString() === `v${v}-${i}` ? undefined : `key-${i}: ${val?.toString()}`))
      .filter((x) => x !== undefined)
    expect(wrong.slice(0, 5)).toEqual([])
    figures.keysRead += keys
  } finally {
    client.close()
  }
}

async function heldVersions(id: number): Promise<number[]> {
  const r = await nodes[id]!.admin('GET', `/stores/${STORE}/versions`)
  return (json<{ versions: { version: number }[] }>(r).versions ?? []).map((x) => x.version)
}

function fault(name: string): void {
  figures.faultsInjected++
  figures.faults.push(name)
}

/** Committed, every node but `id` confirmed its swap; `id` is left to finish by itself. */
function expectDecidedWithPending(r: PushResult, id: number): void {
  expect({ status: r.status, states: r.nodes.map((n) => n.state) }).toEqual({
    status: 'live-with-failures',
    states: [0, 1, 2].map((n) => (n === id ? 'swap-pending' : 'live')),
  })
  figures.decidedThenFinishedByNodes++
}

/** Every node reaches `v` by itself (no operator action), then the usual checks. */
async function expectConverged(v: number): Promise<void> {
  const same = await waitUntil(async () => (await clusterVersions(cluster, STORE, TOKEN)).every((n) => n.live === v), 30_000, 100)
  expect({ converged: same, lives: (await clusterVersions(cluster, STORE, TOKEN)).map((n) => n.live) }).toEqual({
    converged: true,
    lives: [v, v, v],
  })
  await expectConsistent(v)
}

function expectFailed(r: PushResult): void {
  expect(r.status).toBe('failed')
  figures.failedAsExpected++
}

beforeAll(async () => {
  const written = await writeClusterFile(tmp.dir, { nodes: 3, partitionsPerNode: 3 })
  clusterFile = written.path
  cluster = await loadCluster(clusterFile)
  realPort0 = await freePort()
  proxy = await AnswerDroppingProxy.start(written.cluster.nodes[0]!.port, realPort0)
  for (const v of [1, 2, 3, 4, 5, 6, 10, 11]) await buildVersion(v)
  for (const v of [8, 9]) await buildVersion(v, BIG_KEYS)
  // Version 3 again, with node 1's data damaged and its manifest rewritten to match:
  // node 1's fetch succeeds, its verify fails.
  cpSync(join(www(), 'v3'), join(www(), 'v3-bad'), { recursive: true })
  const bad = join(www(), 'v3-bad', 'node-1')
  const data = readFileSync(join(bad, '0.data'))
  data[data.length - 2]! ^= 0x04
  writeFileSync(join(bad, '0.data'), data)
  const meta = JSON.parse(readFileSync(join(bad, 'metadata.json'), 'utf8')) as { files: { name: string; size: number; checksum: string }[] }
  for (const f of meta.files) {
    f.size = statSync(join(bad, f.name)).size
    f.checksum = await checksumFile(join(bad, f.name))
  }
  writeFileSync(join(bad, 'metadata.json'), JSON.stringify(meta))
  // nginx itself sends the big versions slowly: otherwise loopback socket buffers hold a
  // whole file as soon as it is requested, and stopping nginx cuts nothing.
  nginx = await Nginx.launch({ root: www(), serverConfig: 'location /v8/ { limit_rate 512k; } location /v9/ { limit_rate 512k; }' })
  mkdirSync(join(tmp.dir, 'elsewhere'), { recursive: true })
  await Promise.all([0, 1, 2].map((id) => startNode(id)))
})

afterAll(async () => {
  await Promise.all(nodes.map((n) => (n?.running ? n.kill9() : Promise.resolve(undefined))))
  await proxy?.close()
  await nginx?.dispose()
  tmp.cleanup()
  const f = figures
  reportFigures(
    'push-faults',
    `push-faults: ${f.pushes} pushes, ${f.faultsInjected} faults injected (${f.faults.join('; ')}), ${f.failedAsExpected} failed as a whole, ${f.wentLive} went live everywhere, ${f.consistencyChecks} consistency checks passed (${f.keysRead} keys read through the routing client); ${f.decidedThenFinishedByNodes} decided pushes finished by the nodes themselves (a node killed in its swap, answers lost); mixed clusters: 0 after each push`,
    f,
  )
})

test('baseline: version 1 goes live everywhere', async () => {
  const r = await push(source('v1'))
  expect(r.status).toBe('live')
  figures.wentLive++
  await expectConsistent(1)
})

test('a node down before the push: nothing changes, no copy is left behind', async () => {
  fault('node 2 down')
  await nodes[2]!.kill9()
  expectFailed(await push(source('v2')))
  for (const id of [0, 1]) expect(await heldVersions(id)).not.toContain(2)
  await startNode(2)
  await expectConsistent(1)
})

test('a node whose allow-list refuses the source: the push fails, the others drop their copies', async () => {
  fault('node 1 refuses the source (--allowed-source)')
  await nodes[1]!.kill9()
  await startNode(1, { args: ['--allowed-source', join(tmp.dir, 'elsewhere')] })
  const r = await push(source('v2'))
  expectFailed(r)
  expect(r.nodes.find((n) => n.nodeId === 1)).toMatchObject({
    state: 'fetch-failed',
    error: expect.stringMatching(/not under an allowed source/),
  })
  for (const id of [0, 2]) expect(await heldVersions(id)).not.toContain(2)
  expect(await heldVersions(1)).not.toContain(2)
  await nodes[1]!.kill9()
  await startNode(1)
  await expectConsistent(1)
})

test('a node whose fetched copy does not verify: the push fails, nothing is kept', async () => {
  fault('node 1 fetches a copy that fails verify')
  const r = await push(source('v3-bad'))
  expectFailed(r)
  expect(r.nodes.find((n) => n.nodeId === 1)).toMatchObject({
    state: 'fetch-failed',
    error: expect.stringMatching(/RO_CORRUPT|fails its checksum|fetch failed/),
  })
  for (const id of [0, 1, 2]) expect(await heldVersions(id)).not.toContain(3)
  await expectConsistent(1)
})

test('a node that dies in its swap before the pointer flip: the push is decided, the node swaps itself when it restarts', async () => {
  fault('node 2 killed at swap:opened')
  await nodes[2]!.kill9()
  await startNode(2, { env: { ROSTORE_CRASH_AT: 'swap:opened' } })
  const r = await push(source('v4'))
  expectDecidedWithPending(r, 2)
  expect((await nodes[2]!.exited).signal).toBe('SIGKILL')
  await startNode(2)
  await expectConverged(4)
})

test('a node whose vote and swap answers are lost: the push is decided, the node swapped', async () => {
  fault('node 0 vote and swap answers lost')
  const before = proxy.dropped
  proxy.dropAnswers(new RegExp(`^POST /admin/stores/${STORE}/decisions/`), 2)
  const r = await push(source('v5'))
  expect(proxy.dropped - before).toBe(2)
  expectDecidedWithPending(r, 0)
  await expectConverged(5)
})

test('a node that dies in its swap after the pointer flip comes back on the new version, as the others are', async () => {
  fault('node 1 killed at swap:flipped')
  await nodes[1]!.kill9()
  await startNode(1, { env: { ROSTORE_CRASH_AT: 'swap:flipped' } })
  const r = await push(source('v6'))
  expectDecidedWithPending(r, 1)
  await nodes[1]!.exited
  await startNode(1)
  await expectConverged(6)
})

test('the source dies mid-push and comes back: the fetches resume and the push goes live', async () => {
  fault('nginx stopped mid-fetch, back after 700 ms')
  const { pushing, fetching } = pushFetching(source('v8'))
  await fetching
  await nginx.stop()
  await sleep(700) // the outage itself
  await nginx.start()
  const r = await pushing
  expect(r.status).toBe('live')
  figures.wentLive++
  await expectConsistent(8, BIG_KEYS)
})

test('the source dies mid-push for good: the push fails, every node keeps the live version', async () => {
  fault('nginx stopped mid-fetch for good')
  const { pushing, fetching } = pushFetching(source('v9'))
  await fetching
  await nginx.stop()
  try {
    expectFailed(await pushing)
  } finally {
    await nginx.start()
  }
  for (const id of [0, 1, 2]) expect(await heldVersions(id)).not.toContain(9)
  await expectConsistent(8, BIG_KEYS)
})

test('job polls whose answers are lost: the push asks again and goes live', async () => {
  fault("node 0's answers to 5 job polls lost")
  const before = proxy.dropped
  proxy.dropAnswers(/^GET \/admin\/jobs\//, 5)
  const r = await push(source('v10'))
  expect(proxy.dropped - before).toBe(5)
  expect(r.status).toBe('live')
  figures.wentLive++
  await expectConsistent(10)
})

test('after all that, a clean push goes live everywhere', async () => {
  const r = await push(source('v11'))
  expect(r.status).toBe('live')
  figures.wentLive++
  await expectConsistent(11)
})
