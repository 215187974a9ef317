import { join } from 'node:path'
import { buildVersion, numberedRecords } from '../../../testkit/cluster/build-version'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { pushStore } from '../../../client/push/push-store'
import { StoreClient } from '../../../client/store-client'
import { json, startCluster, type NodeProcess, type TestCluster } from '../../../testkit/cluster/node-process'
import { waitUntil } from '../../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The startup peer check and self-repair of a node that missed a push
 * (server/peers/peer-check.ts), case by case: behind and told so by its peers; behind and
 * alone (its own record still says so); not behind and alone (refuses reads for the
 * grace period, then serves); self-repair from the push's source without any peer.
 */

jest.setTimeout(180_000)
const tmp = makeTmp('rostore-peer-check-')
const TOKEN = 'peer-check-token-0123456789'
const KEYS = 200
let nodes: TestCluster
let cluster: Cluster

const out = (v: number): string => join(tmp.dir, 'out', `v${v}`)

async function build(v: number): Promise<void> {
  await buildVersion({ dir: tmp.dir, cluster, version: v, records: numberedRecords(KEYS, (i) => `v${v}-${i}`), output: out(v), chunks: 1 })
}

interface StoreStatus {
  store: string
  version: number | null
  stale: false | { reason: string; since: string }
  behind: number | null
  lastPush: { version: number; missed: number[]; at: string } | null
  repair: { state: string; version: number } | null
}

async function status(n: NodeProcess): Promise<{ store: StoreStatus; peerCheck: { state: string; peersAnswered: number[] } }> {
  const s = json<{ stores: StoreStatus[]; peerCheck: { state: string; peersAnswered: number[] } }>(await n.request('/status'))
  return { store: s.stores.find((x) => x.store === 'st')!, peerCheck: s.peerCheck }
}

/** A key node 0 holds, to read straight from it. */
let KEY = ''

beforeAll(async () => {
  nodes = await startCluster({ dir: tmp.dir, nodes: 3, partitionsPerNode: 3, token: TOKEN })
  cluster = await loadCluster(nodes.clusterFile)
  await build(1)
  await build(2)
  expect((await pushStore({ cluster, store: 'st', from: out(1), adminToken: TOKEN })).status).toBe('live')
  const router = await StoreClient.connect({ cluster, store: 'st' })
  KEY = Array.from({ length: KEYS }, (_, i) => `key-${i}`).find((k) => router.replicasOf(k).includes(0))!
  router.close()
  await nodes.nodes[0]!.kill9()
  const r = await pushStore({ cluster, store: 'st', from: out(2), adminToken: TOKEN, allowFailedNodes: 1 })
  expect(r.status).toBe('live-with-failures')
})

afterAll(async () => {
  await nodes?.killAll()
  tmp.cleanup()
})

test('restarting, a node learns from its peers that it missed a push: reads 503, /status says why', async () => {
  nodes.nodes[0] = await nodes.nodes[0]!.restart({ extraArgs: ['--no-self-repair'] })
  const s = await status(nodes.nodes[0]!)
  expect(s.peerCheck).toMatchObject({ state: 'checked', peersAnswered: [1, 2] })
  expect(s.store).toMatchObject({ version: 1, behind: 2, lastPush: { version: 2, missed: [0] }, repair: null })
  expect(s.store.stale && s.store.stale.reason).toMatch(/^behind: version 2 went live on the other nodes/)
  const g = await nodes.nodes[0]!.request(`/stores/st/keys/${KEY}`)
  expect(g.status).toBe(503)
  expect(json<{ error: { code: string } }>(g).error.code).toBe('RO_UNAVAILABLE')
})

test('alone, a node that knew it was behind stays behind (its own record says so)', async () => {
  for (const n of nodes.nodes) await n.kill9()
  nodes.nodes[0] = await nodes.nodes[0]!.restart({ extraArgs: ['--no-self-repair', '--peer-check-grace-ms', '500'] })
  await nodes.nodes[0]!.waitForEvent((e) => e['event'] === 'peer-check' && e['state'] === 'unverified')
  const s = await status(nodes.nodes[0]!)
  expect(s.peerCheck.state).toBe('unverified')
  expect(s.store).toMatchObject({ version: 1, behind: 2 })
  expect((await nodes.nodes[0]!.request(`/stores/st/keys/${KEY}`)).status).toBe(503)
})

test('alone, a node that is behind repairs itself from the source its own record names', async () => {
  nodes.nodes[0] = await nodes.nodes[0]!.restart({ extraArgs: ['--peer-check-grace-ms', '500'] })
  expect(
    await waitUntil(async () => {
      const s = await status(nodes.nodes[0]!)
      return s.store.version === 2 && s.store.stale === false
    }, 30_000),
  ).toBe(true)
  expect((await status(nodes.nodes[0]!)).store).toMatchObject({ behind: null, repair: { state: 'done', version: 2 } })
  const g = await nodes.nodes[0]!.request(`/stores/st/keys/${KEY}`)
  expect(g.status).toBe(200)
  expect(g.body.toString()).toBe(`v2-${KEY.slice(4)}`)
})

test('with no peer answering, a node refuses reads for the grace period, then serves what it has', async () => {
  await nodes.nodes[0]!.kill9()
  nodes.nodes[1] = await nodes.nodes[1]!.restart({ extraArgs: ['--peer-check-grace-ms', '8000'] })
  const early = await status(nodes.nodes[1]!)
  expect(early.peerCheck.state).toBe('pending')
  expect(early.store.stale && early.store.stale.reason).toMatch(/^starting: asking the other nodes/)
  expect((await nodes.nodes[1]!.request(`/stores/st/keys/${KEY}`)).status).toBe(503)
  await nodes.nodes[1]!.waitForEvent((e) => e['event'] === 'peer-check' && e['state'] === 'unverified', 30_000)
  const later = await status(nodes.nodes[1]!)
  expect(later.store).toMatchObject({ version: 2, stale: false, behind: null })
  // Once a peer is back, the next round finds it.
  nodes.nodes[2] = await nodes.nodes[2]!.restart()
  await nodes.nodes[1]!.waitForEvent((e) => e['event'] === 'peer-check' && e['state'] === 'checked', 90_000)
})
