import { existsSync } from 'node:fs'
import { buildVersion as buildRecords, numberedRecords } from '../../../testkit/cluster/build-version'
import { join } from 'node:path'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { isStoreError } from '../../../common/errors'
import { ClusterAdmin } from '../../../client/cluster-admin'
import { pushStore } from '../../../client/push/push-store'
import { StoreClient } from '../../../client/store-client'
import { clusterVersions } from '../../../client/versions'
import { CliProcess } from '../../../testkit/cluster/cli-process'
import { Nginx } from '../../../testkit/peers/nginx'
import { json, startCluster, type TestCluster } from '../../../testkit/cluster/node-process'
import { leftoversOf, waitUntil } from '../../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The push lease dies with the push: `rostore push` killed with -9 mid-fetch locks the
 * store for one lease (seconds), its fetches stop and leave nothing staged, and the next
 * push goes live; an operator sees the lease (`versions`) and can break it (`unlock`).
 */

jest.setTimeout(120_000)
const tmp = makeTmp('rostore-push-lease-')
const TOKEN = 'push-lease-token-0123456789'
const STORE = 'st'
let nodes: TestCluster
let cluster: Cluster
let nginx: Nginx
let admin: ClusterAdmin

async function buildVersion(v: number, keys: number): Promise<void> {
  await buildRecords({
    dir: tmp.dir,
    cluster,
    store: STORE,
    version: v,
    records: numberedRecords(keys, (i) => `v${v}-${i}`),
    output: join(tmp.dir, 'www', `v${v}`),
  })
}

async function leases(): Promise<(string | undefined)[]> {
  return Promise.all(admin.ids.map(async (id) => (await admin.node(id).lockInfo(STORE))?.owner))
}

async function runningFetches(): Promise<number> {
  const jobs = await Promise.all(admin.ids.map((id) => admin.node(id).jobs()))
  return jobs.flat().filter((j) => j.kind === 'fetch' && j.state === 'running').length
}

async function expectKeys(v: number, keys: number): Promise<void> {
  const client = await StoreClient.connect({ cluster, store: STORE, timeoutMs: 5000 })
  try {
    const names = Array.from({ length: keys }, (_, i) => `key-${i}`)
    const wrong = (await client.getMany(names)).filter((val, i) => val?.toString() !== `v${v}-${i}`)
    expect(wrong.length).toBe(0)
  } finally {
    client.close()
  }
}

beforeAll(async () => {
  nodes = await startCluster({ dir: tmp.dir, nodes: 3, partitionsPerNode: 3, token: TOKEN })
  cluster = await loadCluster(nodes.clusterFile)
  admin = new ClusterAdmin(cluster, TOKEN)
  await buildVersion(1, 500)
  await buildVersion(2, 60_000)
  nginx = await Nginx.launch({ root: join(tmp.dir, 'www') })
  expect((await pushStore({ cluster, store: STORE, from: `${nginx.url}/v1`, adminToken: TOKEN })).status).toBe('live')
})

afterAll(async () => {
  admin?.close()
  await nodes?.killAll()
  await nginx?.dispose()
  tmp.cleanup()
})

test('kill -9 of `rostore push` mid-fetch: the lease lapses, the fetches stop, the next push goes live', async () => {
  const push = new CliProcess(
    ['push', '--cluster', nodes.clusterFile, '--store', STORE, '--from', `${nginx.url}/v2`, '--throttle', '40000', '--lease', '3'],
    { token: TOKEN },
  )
  try {
    // Mid-push: every node holds the lease and is fetching.
    const midPush = await waitUntil(
      async () => (await leases()).every((o) => o?.startsWith('push-')) && (await runningFetches()) === 3,
      30_000,
      100,
    )
    expect({ midPush, exit: push.child.exitCode, stderr: midPush ? '' : push.stderr }).toEqual({ midPush: true, exit: null, stderr: '' })
    // The operator's view names the holder on every node.
    const seen = await CliProcess.run(['versions', '--cluster', nodes.clusterFile, '--store', STORE], { token: TOKEN })
    expect(seen.stdout.match(/^node \d: locked by push-[0-9a-f-]+ until /gm)?.length).toBe(3)
  } finally {
    await push.kill9()
  }
  expect((await clusterVersions(cluster, STORE, TOKEN)).every((n) => n.lock !== undefined)).toBe(true)

  // Not renewed any more, the lease lapses within its 3 s, and with it the fetches.
  expect(await waitUntil(async () => (await leases()).every((o) => o === undefined) && (await runningFetches()) === 0, 30_000, 100)).toBe(
    true,
  )
  for (let id = 0; id < 3; id++) {
    expect(await waitUntil(() => leftoversOf(join(tmp.dir, `data-${id}`, STORE)).length === 0)).toBe(true)
    expect(existsSync(join(tmp.dir, `data-${id}`, STORE, 'version-2'))).toBe(false)
  }
  const jobs = (await Promise.all(admin.ids.map((id) => admin.node(id).jobs()))).flat().filter((j) => j.kind === 'fetch')
  expect(jobs.filter((j) => j.state === 'cancelled').length).toBe(3)

  const r = await pushStore({ cluster, store: STORE, from: `${nginx.url}/v2`, adminToken: TOKEN, pollMs: 50 })
  expect(r.status).toBe('live')
  await expectKeys(2, 60_000)
})

test('a lease left by a stuck push: seen in `versions --json`, broken by `rostore unlock`, then a push goes through', async () => {
  for (const id of admin.ids) await admin.node(id).lock(STORE, 'push-stuck', 600_000)
  const refused = await pushStore({ cluster, store: STORE, from: `${nginx.url}/v1`, adminToken: TOKEN, force: true }).catch(
    (e: unknown) => e,
  )
  expect(isStoreError(refused, 'RO_CONFLICT')).toBe(true)
  const listed = await CliProcess.run(['versions', '--cluster', nodes.clusterFile, '--store', STORE, '--json'], { token: TOKEN })
  const doc = JSON.parse(listed.stdout) as { nodes: { lock?: { owner: string; expiresInMs: number } }[] }
  expect(doc.nodes.map((n) => n.lock?.owner)).toEqual(['push-stuck', 'push-stuck', 'push-stuck'])

  // Without the admin token, or with a malformed request, the lease stays.
  expect((await nodes.nodes[0]!.request(`/admin/stores/${STORE}/lock`, { method: 'DELETE', body: { break: true } })).status).toBe(401)
  const bad = await nodes.nodes[0]!.admin('DELETE', `/stores/${STORE}/lock`, { break: 'yes' })
  expect({ status: bad.status, code: json<{ error: { code: string } }>(bad).error.code }).toEqual({ status: 400, code: 'RO_BAD_REQUEST' })
  expect(await leases()).toEqual(['push-stuck', 'push-stuck', 'push-stuck'])

  const un = await CliProcess.run(['unlock', '--cluster', nodes.clusterFile, '--store', STORE], { token: TOKEN })
  expect({ code: un.code, broke: un.stdout.match(/broke the lease of push-stuck/g)?.length }).toEqual({ code: 0, broke: 3 })
  expect(await leases()).toEqual([undefined, undefined, undefined])
  const r = await pushStore({ cluster, store: STORE, from: `${nginx.url}/v1`, adminToken: TOKEN, force: true })
  expect(r.status).toBe('live')
  await expectKeys(1, 500)
})
