/**
 * Push soak, run by bench/run.ts as its own process:
 *   node dist/bench/versions/soak-bench.js [--quick] [--pushes N] [--records N]
 *
 * One node (the CLI's default workers) takes N pushes (1,000; 100 with --quick) of a store
 * of 50,000 records of 100 B, each a new version (fetch from the build directory, verify,
 * install, swap; retention deletes the old ones). Every 100 pushes it samples the node as a
 * whole (its own process and its serving workers): VmRSS, RssAnon (memory of its own, not
 * mapped file pages), the JavaScript heap in use (nodejs_heap_size_used_bytes of /metrics,
 * summed over the processes) and open file descriptors. Goal: flat after warm-up.
 * Markdown on stdout, progress on stderr.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { pushStore } from '../../client/push/push-store'
import { loadCluster } from '../../cluster/cluster'
import { makeNodeDir } from '../../testkit/stores/make-store'
import { NodeProcess, writeClusterFile } from '../../testkit/cluster/node-process'
import { ensureDir, keyOf, valueOf, workRoot } from '../kit/data'
import { fmt, mdTable } from '../kit/stats'

const TOKEN = 'soak-bench-token-0123456789'
const STORE = 'soak'
const MiB = 1 << 20
const log = (m: string): void => void process.stderr.write(`soak-bench: ${m}\n`)

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

interface Sample {
  readonly pushes: number
  readonly seconds: number
  readonly rss: number
  readonly rssAnon: number
  /** RssAnon of the supervisor alone (the rest is the serving workers'). */
  readonly supervisorAnon: number
  /** Serving workers restarted so far (/status): a replaced worker starts small again. */
  readonly restarts: number
  /** Memory of ArrayBuffers and Buffers outside the JavaScript heap (/metrics, summed). */
  readonly external: number
  /** Mappings of deleted files still in the processes' address spaces (retired versions not yet unmapped). */
  readonly deletedMaps: number
  readonly heapUsed: number
  readonly fds: number
}

function statusKb(pid: number, field: string): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024
}

async function sample(node: NodeProcess, pids: readonly number[], pushes: number, seconds: number): Promise<Sample> {
  const metrics = (await node.request('/metrics')).body.toString()
  const heapUsed = Number(/^nodejs_heap_size_used_bytes\s+(\S+)/m.exec(metrics)?.[1] ?? NaN)
  const status = JSON.parse((await node.request('/status')).body.toString()) as { workers?: { restarts?: number } }
  const external = Number(/^nodejs_external_memory_bytes\s+(\S+)/m.exec(metrics)?.[1] ?? NaN)
  const deletedMaps = pids.reduce(
    (n, p) =>
      n +
      readFileSync(`/proc/${p}/maps`, 'utf8')
        .split('\n')
        .filter((l) => l.endsWith('(deleted)')).length,
    0,
  )
  return {
    external,
    deletedMaps,
    supervisorAnon: statusKb(node.pid, 'RssAnon'),
    restarts: status.workers?.restarts ?? 0,
    pushes,
    seconds,
    rss: pids.reduce((n, p) => n + statusKb(p, 'VmRSS'), 0),
    rssAnon: pids.reduce((n, p) => n + statusKb(p, 'RssAnon'), 0),
    heapUsed,
    fds: pids.reduce((n, p) => n + readdirSync(`/proc/${p}/fd`).length, 0),
  }
}

async function makeBuild(root: string, version: number, records: number): Promise<string> {
  const out = join(root, `build-v${version}`)
  function* pairs(): Generator<[string, Buffer]> {
    for (let i = 0; i < records; i++) yield [keyOf(i), valueOf(i, 100, version)]
  }
  await makeNodeDir(join(out, 'node-0'), pairs(), { store: STORE, version, chunks: 2 })
  return out
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick')
  const pushes = Number(arg('--pushes') ?? (quick ? 100 : 1000))
  const records = Number(arg('--records') ?? 50_000)
  const every = Math.max(1, Math.min(100, Math.floor(pushes / 10)))
  const root = join(ensureDir(join(workRoot(), 'soak-bench')), `run-${process.pid}`)
  rmSync(root, { recursive: true, force: true })
  const { path } = await writeClusterFile(root, { nodes: 1, partitionsPerNode: 1 })
  const cluster = await loadCluster(path)
  const node = await NodeProcess.start({ clusterFile: path, nodeId: 0, dataDir: join(root, 'data'), token: TOKEN })
  const samples: Sample[] = []
  // Taken once: the node's log keeps its last lines only, and the workers' start events
  // scroll out of it over a long soak. A worker replaced meanwhile shows in `restarts`.
  const pids = [node.pid, ...node.workerPids().values()]
  try {
    const t0 = performance.now()
    let next = makeBuild(root, 1, records)
    for (let v = 1; v <= pushes; v++) {
      const from = await next
      // The next build is written while this push runs.
      if (v < pushes) next = makeBuild(root, v + 1, records)
      const r = await pushStore({ cluster, store: STORE, from, adminToken: TOKEN })
      if (r.status !== 'live') throw new Error(`push of version ${v}: ${r.status}`)
      rmSync(from, { recursive: true, force: true })
      if (v === 1 || v % every === 0) {
        samples.push(await sample(node, pids, v, (performance.now() - t0) / 1000))
        log(`${v} pushes`)
      }
    }
    const warm = samples.find((s) => s.pushes >= Math.min(2 * every, pushes)) ?? samples[0]!
    const last = samples[samples.length - 1]!
    const growth = last.rssAnon - warm.rssAnon
    const bound = Math.max(16 * MiB, warm.rssAnon * 0.1)
    const heapGrowth = last.heapUsed - warm.heapUsed
    const heapBound = Math.max(8 * MiB, warm.heapUsed * 0.2)
    const met = growth <= bound && heapGrowth <= heapBound && last.fds <= warm.fds && last.restarts === 0
    const seconds = last.seconds
    const md = [
      `One node (default workers) takes ${pushes} pushes of a store of ${records.toLocaleString('en-US')} records of 100 B (2 chunks), each a new ` +
        `version pushed from its build directory (fetch, verify, install, swap; retention keeps the node's default number of versions). ` +
        `${fmt(seconds, 3)} s in all, ${fmt((seconds / pushes) * 1000)} ms per push (the next build is written during each push). ` +
        `Sampled every ${every} pushes over the node's processes (supervisor and serving workers, summed): VmRSS, RssAnon (memory of ` +
        `its own: RSS less mapped file pages), the JavaScript heap in use (/metrics, summed) and open file descriptors.`,
      '',
      mdTable(
        [
          'pushes',
          's',
          'VmRSS MiB',
          'RssAnon MiB',
          'of it the supervisor',
          'heap used MiB',
          'external MiB',
          'deleted files mapped',
          'open fds',
          'worker restarts',
        ],
        samples.map((s) => [
          String(s.pushes),
          fmt(s.seconds, 3),
          fmt(s.rss / MiB),
          fmt(s.rssAnon / MiB),
          fmt(s.supervisorAnon / MiB),
          fmt(s.heapUsed / MiB),
          fmt(s.external / MiB),
          String(s.deletedMaps),
          String(s.fds),
          String(s.restarts),
        ]),
      ),
      '',
      '| goal | target | measured | status |',
      '|---|---|---|---|',
      `| push soak: memory and files flat after warm-up | RssAnon +≤ ${fmt(bound / MiB)} MiB, heap +≤ ${fmt(heapBound / MiB)} MiB, fds not up, from push ${warm.pushes} to ${last.pushes} | ` +
        `RssAnon ${growth >= 0 ? '+' : ''}${fmt(growth / MiB)} MiB, heap ${heapGrowth >= 0 ? '+' : ''}${fmt(heapGrowth / MiB)} MiB, fds ${warm.fds} → ${last.fds}, ${last.restarts} worker restarts | ${met ? 'met' : 'missed'} |`,
      '',
    ].join('\n')
    process.stdout.write(md)
    await node.sigterm()
  } finally {
    if (node.running) await node.kill9()
    rmSync(root, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
