/**
 * Partition files at work, run by bench/run.ts (`--only partitions`) as its own process:
 *   node dist/bench/versions/partition-bench.js [--quick] [--records 1M]
 *
 * Per shape (N × 100 B and N × 1 KiB, 3 nodes at replication 2, 12 partitions): the bytes
 * nginx sends while a format-2 build is pushed with `--fetch-from source` (every replica
 * from the build output) and with the default `auto` (each partition once from the build
 * output, the other replica from a peer), the time of each push; then a rebalance from 3
 * to 5 nodes without a build: the bytes the nodes fetched against the least the two
 * layouts need (the gained partitions), its time, and the p99 of single-key reads during
 * it against the same reads before it. Real `rostore serve` processes and nginx on loopback.
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { buildStore } from '../../builder/engines/local/build-job'
import { loadCluster, type Cluster } from '../../cluster/cluster'
import { pushStore, type PushResult } from '../../client/push/push-store'
import { planRebalance, rebalanceStore } from '../../client/push/rebalance'
import { StoreClient } from '../../client/store-client'
import type { FetchFrom } from '../../client/push/partition-sources'
import { Nginx } from '../../testkit/peers/nginx'
import { startClusterFromFile, type TestCluster } from '../../testkit/cluster/node-process'
import { nodePorts, writeLayoutFile } from '../../testkit/cluster/layout-files'
import { parseCount, writeSyntheticTsv } from '../kit/data'
import { percentile } from '../kit/stats'
import { clientReadLoop } from '../load/client-read-loop'

const TOKEN = 'partition-bench-token-0123456789'
const STORE = 'bench'
const PARTITIONS = 12
const log = (m: string): void => void process.stderr.write(`partition-bench: ${m}\n`)

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

const keyOf = (i: number): string => String(i).padStart(12, '0')

async function dirBytes(dir: string): Promise<number> {
  let total = 0
  for (const name of await readdir(dir)) total += (await stat(join(dir, name))).size
  return total
}

interface ShapeResult {
  readonly shape: string
  readonly outputBytes: number
  readonly pushes: Record<FetchFrom, { readonly sourceBytes: number; readonly seconds: number }>
  readonly rebalance: {
    readonly moved: number
    readonly minimum: number
    readonly seconds: number
    readonly p99Before: number
    readonly p99During: number
  }
}

async function runShape(root: string, records: number, valueBytes: number, shape: string): Promise<ShapeResult> {
  const dir = await mkdtemp(join(root, 'shape-'))
  const addrs = await nodePorts(5)
  const threeFile = await writeLayoutFile(dir, 'three.json', addrs, { owners: 3, partitions: PARTITIONS })
  const fiveFile = await writeLayoutFile(dir, 'five.json', addrs, { owners: 5, partitions: PARTITIONS })
  const three: Cluster = await loadCluster(threeFile)
  const five: Cluster = await loadCluster(fiveFile)
  const input = join(dir, 'input.tsv')
  log(`${shape}: writing the input`)
  await writeSyntheticTsv(input, records, valueBytes, keyOf)
  const www = join(dir, 'www')
  const modes: FetchFrom[] = ['source', 'auto']
  let outputBytes = 0
  for (const [i] of modes.entries()) {
    const v = i + 1
    await buildStore({
      inputs: [input],
      format: 'tsv',
      cluster: three,
      store: STORE,
      output: join(www, `v${v}`),
      version: v,
      replication: 2,
      layout: 'partitions',
    })
    outputBytes = await dirBytes(join(www, `v${v}`))
  }
  const nginx = await Nginx.launch({ root: www })
  let nodes: TestCluster | undefined
  try {
    nodes = await startClusterFromFile(fiveFile, { dataDir: (id) => join(dir, `data-${id}`), token: TOKEN, keepVersions: 2 })
    const pushes = {} as Record<FetchFrom, { sourceBytes: number; seconds: number }>
    for (const [i, mode] of modes.entries()) {
      const v = i + 1
      const r: PushResult = await pushStore({
        cluster: three,
        store: STORE,
        from: `${nginx.url}/v${v}`,
        adminToken: TOKEN,
        fetchFrom: mode,
      })
      if (r.status !== 'live') throw new Error(`push v${v} (${mode}): ${r.status} ${JSON.stringify(r.nodes)}`)
      const sent = (await nginx.accessLog()).filter((e) => e.uri.startsWith(`/v${v}/`)).reduce((a, e) => a + e.bytesSent, 0)
      pushes[mode] = { sourceBytes: sent, seconds: r.fetchSeconds + r.swapSeconds }
      log(
        `${shape}: push --fetch-from ${mode}: ${sent} bytes from nginx (output ${outputBytes}), ${(r.fetchSeconds + r.swapSeconds).toFixed(2)} s`,
      )
    }
    const client = await StoreClient.connect({ cluster: three, store: STORE, timeoutMs: 10_000 })
    try {
      const before = { done: false }
      const baseline = clientReadLoop(client, records, keyOf, before)
      await new Promise((r) => setTimeout(r, 5000))
      before.done = true
      const p99Before = percentile(await baseline, 99)
      const { plan } = await planRebalance({ cluster: five, store: STORE, adminToken: TOKEN })
      const during = { done: false }
      const reads = clientReadLoop(client, records, keyOf, during)
      const t0 = performance.now()
      const r = await rebalanceStore({ cluster: five, store: STORE, adminToken: TOKEN })
      const seconds = (performance.now() - t0) / 1000
      during.done = true
      const p99During = percentile(await reads, 99)
      if (r.status !== 'live') throw new Error(`rebalance: ${r.status} ${JSON.stringify(r.nodes)}`)
      const moved = r.nodes.reduce((a, n) => a + (n.fetchedBytes ?? 0), 0)
      log(
        `${shape}: rebalance 3 -> 5: ${moved} bytes moved, minimum ${plan.bytes}, ${seconds.toFixed(2)} s, p99 ${p99Before.toFixed(2)} -> ${p99During.toFixed(2)} ms`,
      )
      return { shape, outputBytes, pushes, rebalance: { moved, minimum: plan.bytes, seconds, p99Before, p99During } }
    } finally {
      client.close()
    }
  } finally {
    await nodes?.killAll()
    await nginx.dispose()
    await rm(dir, { recursive: true, force: true })
  }
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick')
  const records = arg('--records') === undefined ? (quick ? 100_000 : 1_000_000) : parseCount(arg('--records')!)
  const root = await mkdtemp(join(arg('--dir') ?? tmpdir(), 'rostore-partition-bench-'))
  const n = records >= 1_000_000 ? `${records / 1_000_000}M` : `${records / 1000}k`
  const results: ShapeResult[] = []
  try {
    for (const [valueBytes, label] of [
      [100, `${n} × 100 B`],
      [1024, `${n} × 1 KiB`],
    ] as const)
      results.push(await runShape(root, records, valueBytes, label))
  } finally {
    await rm(root, { recursive: true, force: true })
  }
  const mb = (b: number): string => (b / 1e6).toFixed(1)
  const ratio = (a: number, b: number): string => (b > 0 ? (a / b).toFixed(3) : 'n/a')
  const lines = [
    `3 nodes at replication 2, 12 partitions, a format-2 build pushed from nginx; then a rebalance to 5 nodes without a build (the build output no longer read). Bytes from the build output are nginx's \`$body_bytes_sent\` for that version; bytes moved are the nodes' own fetch counts.`,
    '',
    '| shape | build output MB | push --fetch-from source: MB from the build output (× output), s | push auto: MB from the build output (× output), s | rebalance 3 → 5: MB moved / minimum MB (×), s | read p99 before / during the rebalance, ms |',
    '|---|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.shape} | ${mb(r.outputBytes)} | ${mb(r.pushes.source.sourceBytes)} (${ratio(r.pushes.source.sourceBytes, r.outputBytes)}), ${r.pushes.source.seconds.toFixed(2)} | ${mb(r.pushes.auto.sourceBytes)} (${ratio(r.pushes.auto.sourceBytes, r.outputBytes)}), ${r.pushes.auto.seconds.toFixed(2)} | ${mb(r.rebalance.moved)} / ${mb(r.rebalance.minimum)} (${ratio(r.rebalance.moved, r.rebalance.minimum)}), ${r.rebalance.seconds.toFixed(2)} | ${r.rebalance.p99Before.toFixed(2)} / ${r.rebalance.p99During.toFixed(2)} |`,
    ),
    '',
    '| goal | target | measured | status |',
    '|---|---|---|---|',
    ...results.flatMap((r) => {
      const push = r.pushes.auto.sourceBytes / r.outputBytes
      const moved = r.rebalance.minimum > 0 ? r.rebalance.moved / r.rebalance.minimum : Infinity
      return [
        `| partition push, ${r.shape}: bytes read from the build output | ≤ 1.05× the output | ${push.toFixed(3)}× | ${push <= 1.05 ? 'met' : 'missed'} |`,
        `| rebalance 3 → 5, ${r.shape}: bytes moved | ≤ 1.05× the minimum | ${moved.toFixed(3)}× | ${moved <= 1.05 ? 'met' : 'missed'} |`,
      ]
    }),
    '',
  ]
  process.stdout.write(lines.join('\n'))
}

main().catch((err: unknown) => {
  process.stderr.write(`partition-bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
