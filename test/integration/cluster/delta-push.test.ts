import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { pushStore, type PushResult } from '../../../client/push/push-store'
import { formatPlan, planPush } from '../../../client/push/plan'
import { StoreClient } from '../../../client/store-client'
import { clusterVersions } from '../../../client/versions'
import { readManifest } from '../../../formats/store/layout/manifest-io'
import { writeInput } from '../../../testkit/stores/input-files'
import { nodePorts, writeLayoutFile } from '../../../testkit/cluster/layout-files'
import { startClusterFromFile, type TestCluster } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'
import { realisticValues } from '../../../testkit/stores/realistic-values'
import { nativeFunctions } from '../../../common/native'
import type { Compression } from '../../../formats/store/layout/metadata'

/**
 * Delta pushes between real node processes: 3 nodes at R=2 take a version by patch from
 * the one they hold, fall back to full files when they lack the base or a patch is bad,
 * and a node killed in the middle of a rebuild comes back serving its live version with
 * nothing of the new one visible.
 */
jest.setTimeout(240_000)
const tmp = makeTmp('rostore-delta-')
const TOKEN = 'delta-push-token-0123456789abcdef'
const PARTITIONS = 12
let cluster: Cluster
let nodes: TestCluster | undefined

type Records = Map<string, string>

async function build(store: string, recs: Records, version: number, base?: string, compression?: Compression): Promise<string> {
  const input = join(tmp.dir, `${store}-in-${version}.tsv`)
  await writeInput(input, 'tsv', [...recs])
  const output = join(tmp.dir, `${store}-v${version}`)
  await buildStore({
    inputs: [input],
    format: 'tsv',
    cluster,
    store,
    output,
    version,
    replication: 2,
    workers: 1,
    memoryMb: 32,
    onDuplicate: 'last',
    ...(base === undefined ? { chunks: 2 } : { base }),
    ...(compression === undefined ? {} : { compression }),
  })
  return output
}

function records(n: number): Records {
  return new Map(Array.from({ length: n }, (_, i) => [`key-${i}`, randomBytes(60 + (i % 80)).toString('base64')]))
}

function changed(recs: Records, every: number, tag: string): Records {
  const out = new Map(recs)
  for (let i = 0; i < recs.size; i += every) out.set(`key-${i}`, `${tag}-${i}`)
  return out
}

async function push(store: string, from: string, o: { throttle?: number } = {}): Promise<PushResult> {
  return pushStore({ cluster, store, from, adminToken: TOKEN, ...o })
}

/** Every node took its 8 held partitions (12 partitions, 3 nodes, R=2) by patch, with under a fifth of its full push's bytes. */
function expectAllByPatch(r: PushResult, full: readonly number[]): void {
  expect(r.status).toBe('live')
  for (const [i, n] of r.nodes.entries()) {
    expect({ node: n.nodeId, byPatch: n.partitions?.byPatch.length, byFiles: n.partitions?.byFiles }).toEqual({
      node: n.nodeId,
      byPatch: 8,
      byFiles: [],
    })
    expect(n.partitions!.bytes).toBeLessThan((full[i] as number) / 5)
  }
}

async function readsAll(store: string, recs: Records): Promise<void> {
  const client = await StoreClient.connect({ cluster, store, timeoutMs: 10_000 })
  try {
    for (const [k, v] of recs) expect({ k, v: (await client.get(k))?.toString('utf8') }).toEqual({ k, v })
  } finally {
    client.close()
  }
}

beforeAll(async () => {
  const addrs = await nodePorts(3)
  const file = await writeLayoutFile(tmp.dir, 'cluster.json', addrs, { owners: 3, partitions: PARTITIONS })
  cluster = await loadCluster(file)
  nodes = await startClusterFromFile(file, { dataDir: (id) => join(tmp.dir, `data-${id}`), token: TOKEN, keepVersions: 3 })
})

afterAll(async () => {
  await nodes?.killAll()
  tmp.cleanup()
})

describe('delta push', () => {
  const v1 = records(3000)
  const v2 = changed(v1, 50, 'v2')
  let d1 = ''
  let d2 = ''

  test('a node holding the base takes every held partition by patch, moving a fraction of the bytes', async () => {
    d1 = await build('st', v1, 1)
    const first = await push('st', d1)
    expect(first.status).toBe('live')
    const full = first.nodes.map((n) => n.partitions?.bytes ?? 0)
    d2 = await build('st', v2, 2, d1)
    // --dry-run predicts it: every held partition by patch, the patches' bytes.
    const plan = await planPush({ cluster, store: 'st', from: d2, adminToken: TOKEN })
    for (const n of plan.nodes) {
      expect(n.byPatch?.length).toBe(8)
      expect(n.files).toBe(8)
      expect(n.fetchBytes).toBeLessThan((full[n.nodeId] as number) / 5)
    }
    expect(formatPlan(plan)).toMatch(/fetches 8 files \(partitions \[[0-9,]+\] by patch\)/)
    const r = await push('st', d2)
    expectAllByPatch(r, full)
    for (const [i, n] of r.nodes.entries()) expect(n.partitions!.bytes).toBe(plan.nodes[i]!.fetchBytes)
    await readsAll('st', v2)
  })

  // A zstd version trained its own dictionary, which changed every stored value: the
  // patches carried everything and the nodes could not rebuild from their base.
  const nativeTest = nativeFunctions() ? test : test.skip
  nativeTest("a zstd store: --base keeps the base's dictionary, and the nodes take the new version by patch", async () => {
    const gen = realisticValues(5)
    const z1: Records = new Map(Array.from({ length: 3000 }, (_, i) => [`key-${i}`, gen.next().toString()]))
    // Every 50th value changes, the first ones included: the sample a new dictionary is trained on changes too.
    const z2 = new Map(z1)
    for (let i = 0; i < z1.size; i += 50) z2.set(`key-${i}`, gen.next().toString())
    const b1 = await build('zs', z1, 1, undefined, 'zstd')
    const first = await push('zs', b1)
    expect(first.status).toBe('live')
    const full = first.nodes.map((n) => n.partitions?.bytes ?? 0)
    const b2 = await build('zs', z2, 2, b1, 'zstd')
    const [m1, m2] = [await readManifest(b1), await readManifest(b2)]
    expect(m1.dictionary?.checksum).toMatch(/^[0-9a-f]+$/)
    expect(m2.dictionary).toEqual(m1.dictionary)
    expect([m1.build['zstdDictionary'], m2.build['zstdDictionary']]).toEqual(['trained', 'base'])
    expect(readFileSync(join(b2, 'zstd.dict')).equals(readFileSync(join(b1, 'zstd.dict')))).toBe(true)
    expectAllByPatch(await push('zs', b2), full)
    await readsAll('zs', z2)
  })

  test('a node without the base takes the full files; a patch with a flipped byte falls back to them', async () => {
    // v3 is built but never pushed: a patch against it finds no base on any node.
    const v3 = changed(v2, 40, 'v3')
    const d3 = await build('st', v3, 3, d2)
    const v4 = changed(v3, 30, 'v4')
    const d4 = await build('st', v4, 4, d3)
    const r4 = await push('st', d4)
    expect(r4.status).toBe('live')
    for (const n of r4.nodes)
      expect({ byPatch: n.partitions?.byPatch, files: n.partitions?.byFiles.length }).toEqual({ byPatch: [], files: 8 })
    await readsAll('st', v4)

    const v5 = changed(v4, 25, 'v5')
    const d5 = await build('st', v5, 5, d4)
    const m5 = await readManifest(d5)
    expect(m5.partitionFiles[0]!.patch).toBeDefined()
    const patch = join(d5, 'p0.patch')
    const bytes = readFileSync(patch)
    bytes[bytes.length - 10] = (bytes[bytes.length - 10] as number) ^ 0x01
    writeFileSync(patch, bytes)
    const r5 = await push('st', d5)
    expect(r5.status).toBe('live')
    const holders = r5.nodes.filter((n) => n.partitions!.byFiles.includes(0))
    expect(holders.length).toBe(2)
    for (const n of holders) {
      expect(n.partitions!.fellBack.map((f) => f.partition)).toEqual([0])
      expect(n.partitions!.byPatch.length).toBe(7)
    }
    await readsAll('st', v5)
  })

  test('a node killed in the middle of a rebuild keeps serving its live version, and nothing of the new one is visible', async () => {
    const c1 = records(20_000)
    const b1 = await build('crash', c1, 1)
    expect((await push('crash', b1)).status).toBe('live')
    const b2 = await build('crash', changed(c1, 100, 'c2'), 2, b1)
    // Slow enough that the rebuild is caught under way: it writes every byte of the partitions.
    const pushing = push('crash', b2, { throttle: 200_000 })
    const storeDir = join(tmp.dir, 'data-0', 'crash')
    const list = (dir: string): string[] => {
      try {
        return readdirSync(dir)
      } catch {
        return []
      }
    }
    const rebuilding = (): boolean =>
      list(storeDir)
        .filter((n) => n.startsWith('.tmp-fetch'))
        .some((n) => list(join(storeDir, n)).some((f) => f.startsWith('.rebuild-p')))
    // Polls the node's staging directory for the rebuild's work directory (bounded).
    for (let i = 0; i < 3000 && !rebuilding(); i++) await new Promise((r) => setTimeout(r, 10))
    expect(rebuilding()).toBe(true)
    await nodes!.nodes[0]!.kill9()
    const failed = await pushing
    expect(failed.status).toBe('failed')
    nodes!.nodes[0] = await nodes!.nodes[0]!.restart()
    expect((await clusterVersions(cluster, 'crash', TOKEN)).map((n) => n.live)).toEqual([1, 1, 1])
    expect(existsSync(join(storeDir, 'version-2'))).toBe(false)
    expect(readdirSync(storeDir).filter((n) => n.startsWith('.tmp-fetch'))).toEqual([])
    await readsAll('crash', c1)
  })
})
