/**
 * Swap benchmark: latency of swap and rollback on a small store and on a multi-GB store
 * (the swap must not depend on the size of the .data files), and the resident memory of
 * a serving node before and after reading every value of the multi-GB store.
 *
 *   node dist/bench/versions/swap-bench.js [--big-gb 2] [--iterations 100] [--read-records 200000] [--dir /tmp] [--keep]
 *
 * Runs a real `rostore serve` child process on loopback; versions are installed with
 * hard links (install verifies them in full first). Writes a markdown table to stdout;
 * progress goes to stderr. Needs about 2 × big-gb of free disk under --dir.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeNodeDir } from '../../testkit/stores/make-store'
import { writeLivePointer } from '../../swapper/disk/live-pointer'
import { json, request, startSingleNode, type NodeProcess } from '../../testkit/cluster/node-process'
import { readsDuringSwaps } from './swap-reads'

const GiB = 1 << 30
const MiB = 1 << 20
const TOKEN = 'swap-bench-token-0123456789'

interface Args {
  readonly bigGb: number
  readonly iterations: number
  readonly dir: string
  readonly keep: boolean
  /** Records of the store read during the swaps (swap-reads.ts). */
  readonly readRecords: number
}

function parseArgs(argv: readonly string[]): Args {
  const value = (flag: string): string | undefined => {
    const i = argv.indexOf(flag)
    return i >= 0 ? argv[i + 1] : undefined
  }
  return {
    bigGb: Number(value('--big-gb') ?? 2),
    iterations: Number(value('--iterations') ?? 100),
    dir: value('--dir') ?? tmpdir(),
    keep: argv.includes('--keep'),
    readRecords: Number(value('--read-records') ?? (argv.includes('--quick') ? 50_000 : 200_000)),
  }
}

const log = (msg: string): void => void process.stderr.write(`${msg}\n`)

function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN
}

interface Resident {
  readonly rss: number
  readonly hwm: number
  /** The memory the process allocated itself (heap, buffers), without mapped file pages. */
  readonly anon: number
}

/** Resident set (current and peak) of a process, in bytes, from /proc. */
function processRss(pid: number): Resident {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024
  return { rss: kb('VmRSS'), hwm: kb('VmHWM'), anon: kb('RssAnon') }
}

/**
 * The node's resident set: its own process and its serving workers, where the values are
 * read (summed: pages of the shared mappings count once per process that touched them).
 */
function rss(node: NodeProcess): Resident {
  const all = [node.pid, ...node.workerPids().values()].map(processRss)
  const sum = (f: (x: Resident) => number): number => all.reduce((n, x) => n + f(x), 0)
  return { rss: sum((x) => x.rss), hwm: sum((x) => x.hwm), anon: sum((x) => x.anon) }
}

const fmtMs = (ms: number): string => ms.toFixed(2)
const fmtMiB = (b: number): string => (b / MiB).toFixed(0)

async function makeSmall(dir: string, version: number): Promise<void> {
  const recs: [string, string][] = []
  for (let i = 0; i < 10_000; i++) recs.push([`key-${i}`, `v${version}:${'x'.repeat(100)}:${i}`])
  await makeNodeDir(dir, recs, { store: 'small', version, chunks: 2 })
}

/** ~bigGb GiB of 1 MiB values (each distinct in its first bytes) in 4 chunks. */
async function makeBig(dir: string, version: number, bigGb: number): Promise<number> {
  const count = Math.round((bigGb * GiB) / MiB)
  const base = Buffer.alloc(MiB, 0x61 + version)
  function* records(): Generator<[string, Buffer]> {
    for (let i = 0; i < count; i++) {
      const v = Buffer.from(base)
      v.write(`v${version}:${i}:`, 0)
      yield [`big-${i}`, v]
    }
  }
  await makeNodeDir(dir, records(), { store: 'big', version, chunks: 4 })
  return count
}

interface Timing {
  readonly rtt: number[]
  readonly server: number[]
  readonly flip: number[]
}

async function admin(node: NodeProcess, path: string, body: object): Promise<{ rtt: number; result: Record<string, unknown> }> {
  const t0 = performance.now()
  const r = await node.admin('POST', path, body)
  const rtt = performance.now() - t0
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.body.toString()}`)
  return { rtt, result: json(r) }
}

/** Alternate swaps 1 <-> 2, and separately swap-to-2 + rollback pairs (timing the rollback). */
async function measure(node: NodeProcess, store: string, iterations: number): Promise<{ swap: Timing; rollback: Timing }> {
  const swap: Timing = { rtt: [], server: [], flip: [] }
  const rollback: Timing = { rtt: [], server: [], flip: [] }
  for (let i = 0; i < iterations; i++) {
    const { rtt, result } = await admin(node, `/stores/${store}/swap`, { version: (i % 2) + 1 === 1 ? 2 : 1 })
    swap.rtt.push(rtt)
    swap.server.push(Number(result['elapsedMs']))
    swap.flip.push(Number(result['flipMs']))
  }
  for (let i = 0; i < iterations; i++) {
    await admin(node, `/stores/${store}/swap`, { version: 2 })
    const { rtt, result } = await admin(node, `/stores/${store}/rollback`, {})
    if (result['to'] !== 1) throw new Error(`rollback went to ${String(result['to'])}`)
    rollback.rtt.push(rtt)
    rollback.server.push(Number(result['elapsedMs']))
    rollback.flip.push(Number(result['flipMs']))
  }
  return { swap, rollback }
}

async function readAll(node: NodeProcess, count: number, concurrency: number): Promise<{ seconds: number; bytes: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  let next = 0
  let bytes = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++
        const r = await request(`${node.url}/stores/big/keys/big-${i}`, { agent })
        if (r.status !== 200 || r.body.length !== MiB) throw new Error(`big-${i}: ${r.status} ${r.body.length}`)
        bytes += r.body.length
      }
    }),
  )
  agent.destroy()
  return { seconds: (performance.now() - t0) / 1000, bytes }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  const root = await mkdtemp(join(args.dir, 'rostore-swap-bench-'))
  log(`work dir ${root}`)
  let node: NodeProcess | undefined
  try {
    for (const v of [1, 2]) await makeSmall(join(root, `small-v${v}`), v)
    let count = 0
    for (const v of [1, 2]) {
      log(`writing big store version ${v} (~${args.bigGb} GiB)...`)
      const t0 = performance.now()
      count = await makeBig(join(root, `big-v${v}`), v, args.bigGb)
      log(`  ${count} values of 1 MiB in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
    }
    node = await startSingleNode({ dir: root, dataDir: join(root, 'data'), token: TOKEN, keepVersions: 5 })
    const installs: Record<string, number> = {}
    for (const [store, v] of [
      ['small', 1],
      ['small', 2],
      ['big', 1],
      ['big', 2],
    ] as const) {
      log(`installing ${store} v${v} (hard links, full verification)...`)
      const t0 = performance.now()
      const r = await node.admin('POST', `/stores/${store}/install`, { path: join(root, `${store}-v${v}`), link: true })
      const job = await node.waitJob(String(json(r)['id']), 600_000)
      if (job['state'] !== 'succeeded') throw new Error(`install ${store} v${v}: ${JSON.stringify(job)}`)
      installs[`${store}-v${v}`] = (performance.now() - t0) / 1000
    }
    for (const store of ['small', 'big']) await admin(node, `/stores/${store}/swap`, { version: 1 })

    const status = json<{ stores: { store: string; records: number; sizeBytes: number }[] }>(await node.request('/status'))
    const size = (s: string): number => status.stores.find((x) => x.store === s)?.sizeBytes ?? NaN
    const records = (s: string): number => status.stores.find((x) => x.store === s)?.records ?? NaN

    // Flush the dirty pages of the generation first: they would stall the fsyncs timed below.
    execFileSync('sync')
    log(`timing ${args.iterations} swaps and rollbacks per store...`)
    const small = await measure(node, 'small', args.iterations)
    const big = await measure(node, 'big', args.iterations)

    // Pointer write alone (temp + fsync + rename + fsync dir) on the same disk: the floor of a flip.
    const pointerDir = join(root, 'pointer-baseline')
    await mkdir(pointerDir)
    const pointer: number[] = []
    for (let i = 0; i < args.iterations; i++) {
      const t0 = performance.now()
      await writeLivePointer(pointerDir, i + 1)
      pointer.push(performance.now() - t0)
    }

    log(`reads during ${args.iterations} swaps (${args.readRecords} records)...`)
    const swapReads = await readsDuringSwaps(node, root, args.readRecords, args.iterations)

    // Memory from a fresh process: the installs' full verification above allocated buffers
    // the allocator may keep; a restarted node shows what serving alone costs.
    await node.sigterm()
    node = await node.restart()
    const before = rss(node)
    log(`reading all ${count} values of the big store...`)
    const cold = await readAll(node, count, 4)
    const afterCold = rss(node)
    const warm = await readAll(node, count, 4)
    const after = rss(node)

    const row = (name: string, store: string, t: Timing): string =>
      `| ${name} | ${store} | ${(size(store) / MiB).toFixed(1)} | ${records(store)} | ${fmtMs(percentile(t.server, 50))} | ${fmtMs(percentile(t.server, 99))} | ${fmtMs(percentile(t.flip, 50))} | ${fmtMs(percentile(t.flip, 99))} | ${fmtMs(percentile(t.rtt, 50))} | ${fmtMs(percentile(t.rtt, 99))} |`
    const out = [
      `## Swap and rollback latency (${args.iterations} each, ms)`,
      '',
      'server = open new reader (index load + index checksum) + LIVE flip + in-memory replace;',
      'flip = LIVE write-temp + fsync + rename + fsync dir + in-memory replace; rtt = admin HTTP call as seen by the client.',
      '',
      '| op | store | data MiB | records | server p50 | server p99 | flip p50 | flip p99 | rtt p50 | rtt p99 |',
      '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
      row('swap', 'small', small.swap),
      row('swap', 'big', big.swap),
      row('rollback', 'small', small.rollback),
      row('rollback', 'big', big.rollback),
      `| LIVE write alone | – | – | – | – | – | ${fmtMs(percentile(pointer, 50))} | ${fmtMs(percentile(pointer, 99))} | – | – |`,
      '',
      `## Node memory while reading the ${(size('big') / GiB).toFixed(2)} GiB store (every value once cold, once warm; 4 concurrent GETs)`,
      '',
      '| moment | VmRSS MiB (node + workers) | VmHWM (peak) MiB, summed | RssAnon MiB, summed |',
      '|---|---:|---:|---:|',
      `| fresh node, both stores open, before reading | ${fmtMiB(before.rss)} | ${fmtMiB(before.hwm)} | ${fmtMiB(before.anon)} |`,
      `| after reading all once (${(cold.bytes / MiB / cold.seconds).toFixed(0)} MiB/s) | ${fmtMiB(afterCold.rss)} | ${fmtMiB(afterCold.hwm)} | ${fmtMiB(afterCold.anon)} |`,
      `| after reading all twice (${(warm.bytes / MiB / warm.seconds).toFixed(0)} MiB/s) | ${fmtMiB(after.rss)} | ${fmtMiB(after.hwm)} | ${fmtMiB(after.anon)} |`,
      '',
      'VmRSS counts the pages of the mapped store files each process has mapped, once per process (they are the page ' +
        "cache's, shared, and not memory the node allocated). With `--preload index` (the default) a worker maps, when it " +
        'opens a version, the data pages that are already cached (here: all of them, right after install verified the ' +
        'files), so VmRSS is high before the first read; RssAnon is what the node itself holds.',
      '',
      `Install (hard links + full verify): ${Object.entries(installs)
        .map(([k, s]) => `${k} ${s.toFixed(1)} s`)
        .join(', ')}.`,
      '',
      swapReads.markdown,
    ]
    process.stdout.write(out.join('\n'))
    await node.sigterm()
  } finally {
    if (node?.running) await node.kill9()
    if (!args.keep) await rm(root, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`swap-bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
