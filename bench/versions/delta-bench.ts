/**
 * Delta pushes, run by bench/run.ts (`--only delta`) as its own process:
 *   node dist/bench/versions/delta-bench.js [--quick] [--records 1M] [--throttle-mb 50]
 *
 * 3 nodes at replication 2, 12 partitions, N × 1 KiB: for 1% and 5% of the records
 * changed, a full build and a build with `--base` of the same records (their times), a
 * push of each at the same per-push throttle and unthrottled (bytes moved by the nodes'
 * own counts, push times), and the p99 of single-key reads during the unthrottled delta
 * push against the same reads before it. Real `rostore serve` processes and nginx on
 * loopback. Beside the reads, in the same seconds, Redis (an unrelated process on the same
 * 2 cores) takes paced GETs: the reads' goal is judged against its p99's rise, as 4g's
 * push rows are (a push on 2 cores slows every server on them).
 */
import { randomBytes } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { buildStore } from '../../builder/engines/local/build-job'
import { loadCluster, type Cluster } from '../../cluster/cluster'
import { pushStore, type PushResult } from '../../client/push/push-store'
import { StoreClient } from '../../client/store-client'
import { Nginx } from '../../testkit/peers/nginx'
import { startClusterFromFile, type TestCluster } from '../../testkit/cluster/node-process'
import { nodePorts, writeLayoutFile } from '../../testkit/cluster/layout-files'
import { parseCount } from '../kit/data'
import { percentile } from '../kit/stats'
import { clientReadLoop } from '../load/client-read-loop'
import type { PacedResult } from '../load/paced-load'
import { pacedRedisGets, startLoadedRedis, type LoadedRedis } from '../peers/redis'

const TOKEN = 'delta-bench-token-0123456789abcd'
const STORE = 'bench'
const PARTITIONS = 12
/** Full and --base builds timed per change share (the fastest of each kept). */
const BUILD_PAIRS = 3
const VALUE_BYTES = 1024
/** The Redis peer's paced GETs per second (one connection, uniform keys, on core 0). */
const PEER_RATE = 2000
const log = (m: string): void => void process.stderr.write(`delta-bench: ${m}\n`)

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

const keyOf = (i: number): string => String(i).padStart(12, '0')

/** Values are windows of a 16 MiB random text at a position per (key, generation): they compress as real ones do. */
const TEXT = Buffer.from(randomBytes(12 << 20).toString('base64'))

function valueAt(i: number, gen: number): Buffer {
  const x = (Math.imul(i + 1, 2654435761) ^ Math.imul(gen + 1, 40503)) >>> 0
  const at = x % (TEXT.length - VALUE_BYTES)
  return TEXT.subarray(at, at + VALUE_BYTES)
}

/** Generation of key i in version `v`: changed (a new generation) in every version for `share` of the keys. */
function generationOf(i: number, v: number, share: number): number {
  const step = Math.round(1 / share)
  if (v <= 1) return 0
  return i % step === v % step ? v : generationOf(i, v - 1, share)
}

async function writeVersion(path: string, records: number, v: number, share: number): Promise<void> {
  const out = createWriteStream(path)
  for (let i = 0; i < records; i++) {
    const line = Buffer.concat([Buffer.from(`${keyOf(i)}\t`), valueAt(i, generationOf(i, v, share)), Buffer.from('\n')])
    if (!out.write(line)) await new Promise<void>((r) => out.once('drain', () => r()))
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())))
}

interface PushRun {
  readonly bytes: number
  readonly seconds: number
  readonly byPatch: number
}

function pushRun(r: PushResult): PushRun {
  if (r.status !== 'live') throw new Error(`push: ${r.status} ${JSON.stringify(r.nodes)}`)
  return {
    bytes: r.nodes.reduce((a, n) => a + (n.partitions?.bytes ?? n.fetchedBytes ?? 0), 0),
    seconds: r.fetchSeconds + r.swapSeconds,
    byPatch: r.nodes.reduce((a, n) => a + (n.partitions?.byPatch.length ?? 0), 0),
  }
}

interface ShareResult {
  readonly share: number
  readonly buildFull: number
  readonly buildBase: number
  readonly full: { readonly throttled: PushRun; readonly unthrottled: PushRun }
  readonly delta: { readonly throttled: PushRun; readonly unthrottled: PushRun }
  readonly p99Before: number
  readonly p99During: number
  /** Redis's p99 in the same seconds; undefined without Redis. */
  readonly peerP99Before: number | undefined
  readonly peerP99During: number | undefined
  /** The delta push the p99 was measured during (its time includes the reads' share of the cores). */
  readonly deltaDuringReads: PushRun
}

type Peer = LoadedRedis | string

/** The peer's paced GETs for `secs`, started now; undefined without Redis. */
function peerLoad(peer: Peer, secs: number, label: string): Promise<PacedResult> | undefined {
  return typeof peer === 'string' ? undefined : pacedRedisGets(peer, { rate: PEER_RATE, connections: 1, secs, kind: 'uniform', label })
}

async function runShare(root: string, records: number, share: number, throttle: number, peer: Peer): Promise<ShareResult> {
  const dir = await mkdtemp(join(root, 'share-'))
  const addrs = await nodePorts(3)
  const cluster: Cluster = await loadCluster(await writeLayoutFile(dir, 'cluster.json', addrs, { owners: 3, partitions: PARTITIONS }))
  const www = join(dir, 'www')
  const buildInto = async (input: string, output: string, v: number, base?: number): Promise<number> => {
    const t0 = performance.now()
    await buildStore({
      inputs: [input],
      format: 'tsv',
      cluster,
      store: STORE,
      output,
      version: v,
      replication: 2,
      ...(base === undefined ? {} : { base: join(www, `v${base}`) }),
    })
    return (performance.now() - t0) / 1000
  }
  const build = async (v: number, base?: number): Promise<void> => {
    const input = join(dir, `in-${v}.tsv`)
    await writeVersion(input, records, v, share)
    await buildInto(input, join(www, `v${v}`), v, base)
    await rm(input, { force: true })
  }
  /**
   * Build time, full against --base (the live version 1), the same input: in pairs on equal
   * terms, each build starting with no dirty pages of earlier writes (sync: a push or build
   * just before would otherwise throttle the next build's writes, and only that one's), the
   * two kinds alternating, the fastest of each kept (on this shared machine noise only adds).
   */
  const buildTimes = async (): Promise<{ full: number; base: number; runs: number }> => {
    const input = join(dir, 'in-timed.tsv')
    await writeVersion(input, records, 2, share)
    const times = { full: Infinity, base: Infinity }
    const each: string[] = []
    for (let pair = 0; pair < BUILD_PAIRS; pair++) {
      for (const kind of ['full', 'base'] as const) {
        const out = join(dir, `timed-${kind}`)
        execFileSync('sync')
        const secs = await buildInto(input, out, 2, kind === 'base' ? 1 : undefined)
        each.push(`${kind} ${secs.toFixed(2)}`)
        times[kind] = Math.min(times[kind], secs)
        await rm(out, { recursive: true, force: true })
      }
    }
    await rm(input, { force: true })
    log(
      `${share * 100}%: build full ${times.full.toFixed(2)} s, --base ${times.base.toFixed(2)} s (best of ${BUILD_PAIRS}: ${each.join(', ')})`,
    )
    return { ...times, runs: BUILD_PAIRS }
  }
  const nginx = await Nginx.launch({ root: www })
  let nodes: TestCluster | undefined
  const label = `${share * 100}%`
  try {
    nodes = await startClusterFromFile(join(dir, 'cluster.json'), {
      dataDir: (id) => join(dir, `data-${id}`),
      token: TOKEN,
      keepVersions: 1,
    })
    const push = async (v: number, t?: number): Promise<PushRun> => {
      const r = pushRun(
        await pushStore({ cluster, store: STORE, from: `${nginx.url}/v${v}`, adminToken: TOKEN, ...(t ? { throttle: t } : {}) }),
      )
      log(`${label}: push v${v}${t ? ' throttled' : ''}: ${r.bytes} bytes, ${r.seconds.toFixed(2)} s, ${r.byPatch} partitions by patch`)
      await rm(join(www, `v${v - 2}`), { recursive: true, force: true })
      return r
    }
    log(`${label}: v1`)
    await build(1)
    execFileSync('sync')
    const fullUnthrottled = await push(1)
    const times = await buildTimes()
    // v2: the same change share, full build (no base): a full push at the throttle.
    await build(2)
    execFileSync('sync')
    const fullThrottled = await push(2, throttle)
    // v3, v4: builds with --base (the live version), pushed by patch.
    await build(3, 2)
    execFileSync('sync')
    const deltaThrottled = await push(3, throttle)
    // Pushes are timed as they start from the same state: no dirty pages of the build before.
    await build(4, 3)
    execFileSync('sync')
    const deltaUnthrottled = await push(4)
    // v5: a delta push again, unthrottled, while a client reads (the reads' p99, before and during).
    await build(5, 4)
    execFileSync('sync')
    const client = await StoreClient.connect({ cluster, store: STORE, timeoutMs: 10_000 })
    try {
      const before = { done: false }
      const peerBefore = peerLoad(peer, 3, `${label} before`)
      const baseline = clientReadLoop(client, records, keyOf, before)
      await new Promise((r) => setTimeout(r, 3000))
      before.done = true
      const p99Before = percentile(await baseline, 99)
      const peerP99Before = (await peerBefore)?.p99Ms
      const during = { done: false }
      const reads = clientReadLoop(client, records, keyOf, during)
      // The peer's run is as long as the same push took alone (v4): within this one's seconds.
      const peerDuring = peerLoad(peer, Math.max(1, Math.round(deltaUnthrottled.seconds)), `${label} during`)
      const deltaDuringReads = await push(5)
      during.done = true
      const p99During = percentile(await reads, 99)
      const peerP99During = (await peerDuring)?.p99Ms
      // v6 full, v7 by patch against it: a second unthrottled pair, each kind's faster one
      // kept (as for builds: on this shared machine a push alone took 9-20 s over a day).
      await build(6)
      execFileSync('sync')
      const fullAgain = await push(6)
      await build(7, 6)
      execFileSync('sync')
      const deltaAgain = await push(7)
      const faster = (a: PushRun, b: PushRun): PushRun => (b.seconds < a.seconds ? b : a)
      return {
        share,
        buildFull: times.full,
        buildBase: times.base,
        full: { throttled: fullThrottled, unthrottled: faster(fullUnthrottled, fullAgain) },
        delta: { throttled: deltaThrottled, unthrottled: faster(deltaUnthrottled, deltaAgain) },
        p99Before,
        p99During,
        peerP99Before,
        peerP99During,
        deltaDuringReads,
      }
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
  const throttle = Number(arg('--throttle-mb') ?? 50) * 1e6
  const root = await mkdtemp(join(arg('--dir') ?? tmpdir(), 'rostore-delta-bench-'))
  const results: ShareResult[] = []
  const peer = await startLoadedRedis('delta-redis')
  if (typeof peer === 'string') log(`no Redis peer: ${peer}`)
  try {
    for (const share of [0.01, 0.05]) results.push(await runShare(root, records, share, throttle, peer))
  } finally {
    if (typeof peer !== 'string') peer.redis.stop()
    await rm(root, { recursive: true, force: true })
  }
  const n = records >= 1_000_000 ? `${records / 1_000_000}M` : `${records / 1000}k`
  const mb = (b: number): string => (b / 1e6).toFixed(1)
  const x = (a: number, b: number): string => (b > 0 ? (a / b).toFixed(3) : 'n/a')
  const lines = [
    `3 nodes at replication 2, 12 partitions, ${n} × 1 KiB pushed from nginx; a share of the records changed per version. Full: a build without --base; delta: with --base of the version live on the nodes. Build times: the same input built full and with --base of the live version, alternating, ${BUILD_PAIRS} of each, each after a sync (no dirty pages of the push or build before it), the fastest of each kind; the nodes are up and idle. Each push starts after a sync; unthrottled pushes are timed alone, twice of each kind (v1 and v6 full, v4 and v7 by patch), the faster of each kept; another delta push (v5) runs while a client reads (the p99 column). Bytes moved are the nodes' own counts (patches and files); throttled pushes at ${mb(throttle)} MB/s per node (the push's --throttle). Redis column: the peer's p99, before and during, over the same seconds (${PEER_RATE} paced GETs/s on one connection, uniform keys of 1M × 1 KiB, its load generator on core 0; during: for as long as the same push took alone).`,
    '',
    '| changed | build s: full / --base (×) | bytes moved MB: full / delta (×) | push s throttled: full / delta (×) | push s unthrottled: full / delta (×) | read p99 ms before / during a delta push (its s, unthrottled) | Redis p99 ms before / during |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.share * 100}% | ${r.buildFull.toFixed(1)} / ${r.buildBase.toFixed(1)} (${x(r.buildBase, r.buildFull)}) | ${mb(r.full.unthrottled.bytes)} / ${mb(r.delta.unthrottled.bytes)} (${x(r.delta.unthrottled.bytes, r.full.unthrottled.bytes)}) | ${r.full.throttled.seconds.toFixed(2)} / ${r.delta.throttled.seconds.toFixed(2)} (${x(r.delta.throttled.seconds, r.full.throttled.seconds)}) | ${r.full.unthrottled.seconds.toFixed(2)} / ${r.delta.unthrottled.seconds.toFixed(2)} (${x(r.delta.unthrottled.seconds, r.full.unthrottled.seconds)}) | ${r.p99Before.toFixed(2)} / ${r.p99During.toFixed(2)} (${r.deltaDuringReads.seconds.toFixed(2)} s) | ${r.peerP99Before === undefined || r.peerP99During === undefined ? 'no peer' : `${r.peerP99Before.toFixed(2)} / ${r.peerP99During.toFixed(2)}`} |`,
    ),
    '',
    '| goal | target | measured | status |',
    '|---|---|---|---|',
    ...results.flatMap((r) => {
      const bytes = r.delta.unthrottled.bytes / r.full.unthrottled.bytes
      const thr = r.delta.throttled.seconds / r.full.throttled.seconds
      const unthr = r.delta.unthrottled.seconds / r.full.unthrottled.seconds
      const bld = r.buildBase / r.buildFull
      const met = (ok: boolean): string => (ok ? 'met' : 'missed')
      return [
        `| delta push, ${r.share * 100}% changed: bytes moved | ≤ ${(2 * r.share).toFixed(2)}× a full push | ${bytes.toFixed(3)}× | ${met(bytes <= 2 * r.share)} |`,
        `| delta push, ${r.share * 100}% changed: time, throttled | ≤ 0.3× a full push | ${thr.toFixed(3)}× | ${met(thr <= 0.3)} |`,
        `| delta push, ${r.share * 100}% changed: time, unthrottled | ≤ 0.3× a full push | ${unthr.toFixed(3)}× | ${met(unthr <= 0.3)} |`,
        `| build --base, ${r.share * 100}% changed | ≤ 1.2× the full build | ${bld.toFixed(3)}× | ${met(bld <= 1.2)} |`,
      ]
    }),
    // After both shares' rows, so the goal ids of the rows above (by position) stay as they were.
    ...results.map((r) => readsRow(r)),
    '',
  ]
  process.stdout.write(lines.join('\n'))
}

/**
 * The reads' goal row: the bound of 4g's push rows (bench/cold/cold-bench.ts pushVerdict),
 * the p99's rise over before within 1.5× of the larger of 1 and Redis's rise in the same
 * seconds; without Redis, the absolute bound of section 4's reads during a push.
 */
function readsRow(r: ShareResult): string {
  const label = `| reads during a delta push, ${r.share * 100}% changed: p99 |`
  const rise = r.p99During / r.p99Before
  const measured = `${r.p99During.toFixed(2)} ms, before ${r.p99Before.toFixed(2)} (${rise.toFixed(2)}×)`
  if (r.peerP99Before === undefined || r.peerP99During === undefined) {
    const bound = 1.5 * r.p99Before + 0.1
    return `${label} ≤ 1.5 × before + 0.1 ms (${bound.toFixed(2)} ms; no Redis peer) | ${measured} | ${r.p99During <= bound ? 'met' : 'missed'} |`
  }
  const peerRise = r.peerP99During / r.peerP99Before
  const allowed = 1.5 * Math.max(1, peerRise)
  return `${label} rise ≤ 1.5 × max(1, Redis's rise) (${allowed.toFixed(2)}×) | ${measured}; Redis ${r.peerP99During.toFixed(2)} ms, before ${r.peerP99Before.toFixed(2)} (${peerRise.toFixed(2)}×) | ${rise <= allowed ? 'met' : 'missed'} |`
}

main().catch((err: unknown) => {
  process.stderr.write(`delta-bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
