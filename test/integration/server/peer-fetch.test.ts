import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { buildRing, heldPartitions, masterPartition } from '../../../cluster/routing'
import { createKeyHasher } from '../../../formats/store/layout/key-hash'
import { nodeView, type VersionManifest } from '../../../formats/store/layout/partition-files'
import { numberedRecords } from '../../../testkit/cluster/build-version'
import { makeBuildOutput } from '../../../testkit/stores/make-partitioned'
import { Nginx } from '../../../testkit/peers/nginx'
import { json, startCluster, type NodeProcess, type TestCluster } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

const TOKEN = 'peer-fetch-admin-token-0123456789'
const RECORDS = numberedRecords(600, (i) => `value-${i}`)

/**
 * Three real nodes at R=2 fetch a format-2 version through the admin fetch route: the first
 * from the build output (nginx), the second from its peer for the partitions they share,
 * the third from peers only with the build output deleted; each then serves every key of
 * the partitions it masters.
 */
describe('nodes fetch partitions from the build output or from each other', () => {
  const tmp = makeTmp('rostore-peer-fetch-')
  let nginx: Nginx
  let c: TestCluster
  let v1: VersionManifest
  const serve = join(tmp.dir, 'serve')

  beforeAll(async () => {
    // testkit's cluster file deals node i partitions i and i + 3: the manifest's default layout.
    c = await startCluster({ dir: join(tmp.dir, 'cluster'), nodes: 3, partitionsPerNode: 2, token: TOKEN })
    v1 = await makeBuildOutput(join(serve, 'v1'), RECORDS, { store: 'users', version: 1, replication: 2 })
    v1 = { ...v1, clusterName: 'test-cluster' }
    nginx = await Nginx.launch({ root: serve })
  })
  afterAll(async () => {
    await c?.killAll()
    await nginx?.dispose()
    tmp.cleanup()
  })

  const node = (id: number): NodeProcess => c.nodes[id] as NodeProcess

  async function fetchJob(id: number, body: object): Promise<Record<string, unknown>> {
    const r = await node(id).admin('POST', '/stores/users/fetch', body)
    expect(r.status).toBe(202)
    return node(id).waitJob(String(json(r)['id']))
  }

  const bytesOf = (id: number, partitions: readonly number[]): number =>
    nodeView(v1, id)
      .files.filter((f) => partitions.some((p) => f.name.startsWith(`p${p}-`)))
      .reduce((a, f) => a + f.size, 0)

  /** Every key whose master partition `id` holds reads back its value through that node alone. */
  async function readsAll(id: number, m: VersionManifest = v1): Promise<number> {
    const hasher = await createKeyHasher(m.keyHash)
    const held = new Set(heldPartitions(buildRing(m.layout), m.replication, id))
    let n = 0
    for (const [k, v] of RECORDS) {
      if (!held.has(masterPartition(hasher.hash(Buffer.from(k)), m.partitions))) continue
      const r = await node(id).request(`/stores/users/keys/${k}`)
      expect({ k, status: r.status, body: r.body.toString() }).toEqual({ k, status: 200, body: v })
      n++
    }
    return n
  }

  test('the admin fetch body is validated', async () => {
    const bad = [
      { source: `${nginx.url}v1`, fetchFrom: 'sometimes' },
      { source: `${nginx.url}v1`, peers: [{ nodeId: 9 }] },
      { source: `${nginx.url}v1`, peers: [{ nodeId: 1, url: 'http://elsewhere/' }] },
      { fetchFrom: 'auto', peers: [{ nodeId: 1 }] },
      { fetchFrom: 'peers' },
      { source: `${nginx.url}v1`, manifest: 'not an object' },
    ]
    for (const body of bad) {
      const r = await node(0).admin('POST', '/stores/users/fetch', body)
      if (r.status === 202) {
        const job = await node(0).waitJob(String(json(r)['id']))
        expect(job['state']).toBe('failed')
        expect(JSON.stringify(job['error'])).toContain('RO_BAD_REQUEST')
      } else expect(r.status).toBe(400)
    }
  })

  test('from the build output, then from a peer, then repair from peers with the build output deleted', async () => {
    const first = await fetchJob(0, { source: `${nginx.url}v1`, fetchFrom: 'source', swap: true })
    expect(first['state']).toBe('succeeded')
    const r0 = first['result'] as { bytesFrom: Record<string, number> }
    expect(r0.bytesFrom).toEqual({ source: bytesOf(0, [0, 1, 2, 3, 4, 5]), peer: 0, link: 0 })

    // Node 1 holds 0, 1, 3, 4; node 0 holds 0, 2, 3, 5: 0 and 3 come from node 0.
    const second = await fetchJob(1, { source: `${nginx.url}v1`, peers: [{ nodeId: 0 }], swap: true })
    expect(second['state']).toBe('succeeded')
    const r1 = second['result'] as { bytesFrom: Record<string, number> }
    expect(r1.bytesFrom).toEqual({ source: bytesOf(1, [1, 4]), peer: bytesOf(1, [0, 3]), link: 0 })
    const got = (await nginx.accessLog()).filter((e) => /^\/v1\/p[03]-/.test(e.uri))
    // Every file of partitions 0 and 3 left the build output once: for node 0.
    expect(got.length).toBe(nodeView(v1, 0).files.filter((f) => /^p[03]-/.test(f.name)).length)

    const metrics = (await node(0).request('/metrics')).body.toString()
    expect(Number(/^rostore_peer_file_bytes_sent_total (\d+)/m.exec(metrics)?.[1])).toBe(bytesOf(1, [0, 3]))
    // Through a multi-process node's control proxy: Range and its status pass as they are.
    const f = nodeView(v1, 1).files.find((x) => x.name === 'p1-c0.data')
    const whole = await node(1).admin('GET', '/stores/users/versions/1/files/p1-c0.data')
    expect(whole.status).toBe(200)
    expect(whole.body.length).toBe(f?.size)
    const tail = await node(1).request('/admin/stores/users/versions/1/files/p1-c0.data', {
      headers: { authorization: `Bearer ${TOKEN}`, range: 'bytes=7-' },
    })
    expect(tail.status).toBe(206)
    expect(tail.body.equals(whole.body.subarray(7))).toBe(true)

    await rm(join(serve, 'v1'), { recursive: true })
    const third = await fetchJob(2, { fetchFrom: 'peers', version: 1, peers: [{ nodeId: 0 }, { nodeId: 1 }], swap: true })
    expect(third['state']).toBe('succeeded')
    const r2 = third['result'] as { bytesFrom: Record<string, number> }
    expect(r2.bytesFrom.source).toBe(0)
    expect(r2.bytesFrom.peer).toBe(bytesOf(2, [0, 1, 2, 3, 4, 5]))
    let total = 0
    for (const id of [0, 1, 2]) total += await readsAll(id)
    // Each key is read through the nodes holding its partition: R times.
    expect(total).toBe(RECORDS.length * 2)
  })

  test('a new layout of the same data, from an inline manifest: kept partitions hardlinked, gained ones from an older version on a peer', async () => {
    // Version 5 re-deals v1's partitions (as a rebalance would): node 0 now holds 0, 1, 3, 4.
    const layout = [
      { id: 0, partitions: [1, 4] },
      { id: 1, partitions: [2, 5] },
      { id: 2, partitions: [0, 3] },
    ]
    const v5: VersionManifest = { ...v1, version: 5, dataVersion: 1, layout }
    const job = await fetchJob(0, {
      fetchFrom: 'peers',
      manifest: v5,
      version: 5,
      // Node 1 holds 1 and 4 in version 1 (they are not in node 0's version 1).
      peers: [{ nodeId: 1, version: 1, partitions: [1, 4] }],
      swap: true,
    })
    expect(job).toMatchObject({ state: 'succeeded' })
    const sizeOf = (ps: readonly number[]): number =>
      nodeView(v5, 0)
        .files.filter((f) => ps.some((p) => f.name.startsWith(`p${p}-`)))
        .reduce((a, f) => a + f.size, 0)
    expect((job['result'] as { bytesFrom: Record<string, number> }).bytesFrom).toEqual({
      source: 0,
      peer: sizeOf([1, 4]),
      link: sizeOf([0, 3]),
    })
    expect(await readsAll(0, v5)).toBeGreaterThan(0)
  })

  test('a peer still fetching a partition is waited for, and gives it once verified', async () => {
    const big = numberedRecords(600, (i) => `${'v'.repeat(600)}${i}`)
    const v3 = {
      ...(await makeBuildOutput(join(serve, 'v3'), big, { store: 'users', version: 3, replication: 2 })),
      clusterName: 'test-cluster',
    }
    // Node 0 fetches slowly (its 255 kB in about 3 s): node 1 asks for files it has not verified yet.
    const slow = await node(0).admin('POST', '/stores/users/fetch', {
      source: `${nginx.url}v3`,
      fetchFrom: 'source',
      maxBytesPerSec: 100_000,
    })
    expect(slow.status).toBe(202)
    let started = await node(0).admin('GET', '/stores/users/versions/3/files/manifest.json')
    for (let i = 0; i < 500 && started.status !== 200; i++)
      started = await node(0).admin('GET', '/stores/users/versions/3/files/manifest.json')
    expect(started.status).toBe(200)
    const job = await fetchJob(1, { source: `${nginx.url}v3`, peers: [{ nodeId: 0 }] })
    expect(job['state']).toBe('succeeded')
    const shared = nodeView(v3, 1).files.filter((f) => /^p[03]-/.test(f.name))
    const result = job['result'] as { bytesFrom: Record<string, number>; notReadyWaits: number }
    expect(result.bytesFrom.peer).toBe(shared.reduce((a, f) => a + f.size, 0))
    expect(result.notReadyWaits).toBeGreaterThan(0)
    expect((await node(0).waitJob(String(json(slow)['id'])))['state']).toBe('succeeded')
    // The shared partitions left the build output once, for node 0.
    const got = (await nginx.accessLog()).filter((e) => /^\/v3\/p[03]-/.test(e.uri) && e.status < 300)
    expect(got.length).toBe(shared.length)
  })

  test('a version a node is still fetching: its verified files are served, the rest answer not ready', async () => {
    const v2 = await makeBuildOutput(join(serve, 'v2'), RECORDS, { store: 'users', version: 2, replication: 2 })
    const view = nodeView({ ...v2, clusterName: 'test-cluster' }, 0)
    const res = await node(0).admin('POST', '/stores/users/fetch', { source: `${nginx.url}v2`, fetchFrom: 'source', maxBytesPerSec: 2000 })
    expect(res.status).toBe(202)
    const jobId = String(json(res)['id'])
    const path = (f: string): string => `/stores/users/versions/2/files/${f}`
    try {
      // The manifest is written before any file: served as soon as the fetch starts.
      let manifest = await node(0).admin('GET', path('manifest.json'))
      for (let i = 0; i < 500 && manifest.status !== 200; i++) manifest = await node(0).admin('GET', path('manifest.json'))
      expect(manifest.status).toBe(200)
      // Index files come last: at 2 kB/s, the last one is far away.
      const last = view.files.filter((f) => f.name.endsWith('.index')).at(-1)?.name as string
      const early = await node(0).admin('GET', path(last))
      expect(early.status).toBe(409)
      expect(json<{ error: { code: string } }>(early).error.code).toBe('RO_NOT_READY')
      const notHeld = await node(0).admin('GET', path('p1-c0.data'))
      expect(notHeld.status).toBe(404)
    } finally {
      await node(0).admin('POST', `/jobs/${jobId}/cancel`)
      await node(0).waitJob(jobId)
    }
    // The fetch is over: its version is unknown again.
    expect((await node(0).admin('GET', path('manifest.json'))).status).toBe(404)
  })
})
