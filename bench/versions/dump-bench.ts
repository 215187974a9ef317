/**
 * Streaming a store out, run by bench/run.ts as its own process:
 *   node dist/bench/versions/dump-bench.js [--quick] [--records N] [--runs N]
 *
 * One node (the CLI's default workers) serves N records of 100 B (1M; 300k with --quick).
 * 1. Live reads under a dump: a probe process reads one key at a time (read-probe.ts);
 *    phases: baseline (no dump), then a full entries dump at the node's default
 *    `--stream-max-bytes-per-sec` (10 MB/s), same run. Goal: the dump phase's p99 within
 *    noise of the baseline's (at most 1.5x it + 0.1 ms, the rule of push-reads.ts). The
 *    throttled phase also gives the default throttle's accuracy.
 * 2. Unthrottled dump rate (the node restarted with `--stream-max-bytes-per-sec 0`): a full
 *    entries stream to a client that discards it, vs `cat` of the same version's files to
 *    /dev/null, alternated, both from the page cache; reported as a ratio (no goal set).
 * Markdown on stdout, progress on stderr.
 */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { join } from 'node:path'
import { NodeProcess, writeClusterFile } from '../../testkit/cluster/node-process'
import { DEFAULT_SEED, ensureDataset, ensureDir, label, parseCount, shapes, workRoot } from '../kit/data'
import { p99WithinNoise, phaseRow, startReadProbe } from '../load/probe-client'
import type { PhaseStats } from '../load/read-probe'
import { rostoreBuild, STORE } from '../kit/rostore'
import { fmt, mdTable } from '../kit/stats'

const TOKEN = 'dump-bench-token-0123456789'
const DEFAULT_LIMIT = 10_000_000
const log = (m: string): void => void process.stderr.write(`dump-bench: ${m}\n`)

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

/** Streams every entry and discards it; bytes received and seconds from request to end. */
async function dumpOnce(port: number): Promise<{ bytes: number; seconds: number }> {
  const t0 = performance.now()
  const res = await new Promise<IncomingMessage>((resolve, reject) =>
    httpRequest({ host: '127.0.0.1', port, path: `/admin/stores/${STORE}/dump/entries`, headers: { authorization: `Bearer ${TOKEN}` } })
      .on('response', resolve)
      .on('error', reject)
      .end(),
  )
  if (res.statusCode !== 200) throw new Error(`dump answered ${res.statusCode}`)
  let bytes = 0
  for await (const c of res as AsyncIterable<Buffer>) bytes += c.length
  return { bytes, seconds: (performance.now() - t0) / 1000 }
}

async function catOnce(files: readonly string[]): Promise<number> {
  const t0 = performance.now()
  await new Promise<void>((resolve, reject) => {
    const p = spawn('cat', files, { stdio: ['ignore', 'ignore', 'inherit'] })
    p.on('error', reject)
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`cat exited with ${code}`))))
  })
  return (performance.now() - t0) / 1000
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick')
  const records = parseCount(arg('--records') ?? (quick ? '300k' : '1M'))
  const runs = Number(arg('--runs') ?? (quick ? 2 : 3))
  const ds = ensureDataset(shapes(records)[0]!, DEFAULT_SEED)
  const out = join(workRoot(), 'dump-bench', `n${records}`)
  if (!existsSync(join(out, 'node-0', 'metadata.json'))) {
    rmSync(out, { recursive: true, force: true })
    ensureDir(join(workRoot(), 'dump-bench'))
    log(`building ${label(records)} records`)
    await rostoreBuild(ds, out, { version: 1 })
  }
  const dir = join(workRoot(), 'dump-bench', `node-${process.pid}`)
  rmSync(dir, { recursive: true, force: true })
  const { path } = await writeClusterFile(dir, { nodes: 1, partitionsPerNode: 1 })
  let node = await NodeProcess.start({ clusterFile: path, nodeId: 0, dataDir: join(dir, 'data'), token: TOKEN })
  try {
    await node.install(STORE, join(out, 'node-0'), { swap: true })
    const versionDir = join(dir, 'data', STORE, 'version-1')
    const files = readdirSync(versionDir)
      .filter((f) => /^\d+\.(index|data)$/.test(f))
      .map((f) => join(versionDir, f))
    const fileBytes = files.reduce((n, f) => n + statSync(f).size, 0)

    // 1. Reads under a dump at the default throttle, against reads without, same run.
    const probe = startReadProbe({ port: node.port, store: STORE, records, seed: DEFAULT_SEED, maxSec: 3600 })
    probe.phase('warm-up')
    await new Promise((r) => setTimeout(r, 2000))
    // The baseline lasts as long as the dump will (its bytes at the default limit).
    const expectedSec = fileBytes / DEFAULT_LIMIT
    probe.phase('baseline')
    await new Promise((r) => setTimeout(r, Math.max(3, expectedSec) * 1000))
    probe.phase('dump')
    log(`dump at the default throttle under reads (~${fmt(expectedSec)} s)`)
    const throttled = await dumpOnce(node.port)
    const phases = await probe.stop()
    const base = phases['baseline'] as PhaseStats
    const during = phases['dump'] as PhaseStats
    const { bound, met: p99Met } = p99WithinNoise(base, during)
    const throttledRate = throttled.bytes / throttled.seconds
    const offPct = ((throttledRate - DEFAULT_LIMIT) / DEFAULT_LIMIT) * 100

    // 2. Unthrottled dump vs cat of the same files.
    await node.sigterm()
    node = await NodeProcess.start({
      clusterFile: path,
      nodeId: 0,
      dataDir: join(dir, 'data'),
      token: TOKEN,
      extraArgs: ['--stream-max-bytes-per-sec', '0'],
    })
    await dumpOnce(node.port) // warm-up: JIT and page cache
    const dumps: number[] = []
    const cats: number[] = []
    let streamed = 0
    for (let r = 0; r < runs; r++) {
      cats.push(fileBytes / (await catOnce(files)) / 1e6)
      const d = await dumpOnce(node.port)
      streamed = d.bytes
      dumps.push(d.bytes / d.seconds / 1e6)
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
    const row = (name: string, p: PhaseStats): string[] => phaseRow(name, p, ['s', 'reads', 'errors', 'p50', 'p99', 'max'])
    const md = [
      `One node (default workers) serves ${label(records)} records of 100 B: ${fmt(fileBytes / 1e6)} MB of chunk files. ` +
        `A probe process reads one key at a time over one keep-alive connection; baseline without a dump, then during a full entries dump at the default ` +
        `\`--stream-max-bytes-per-sec\` (${DEFAULT_LIMIT / 1e6} MB/s), same run.`,
      '',
      mdTable(
        ['phase', 's', 'reads', 'errors', 'p50 ms', 'p99 ms', 'max ms'],
        [row('baseline (no dump)', base), row('during a dump at 10 MB/s', during)],
      ),
      '',
      `The throttled dump: ${fmt(throttled.bytes / 1e6)} MB in ${fmt(throttled.seconds, 3)} s = ${fmt(throttledRate / 1e6)} MB/s (${fmt(offPct, 1)}% off the limit).`,
      '',
      `Unthrottled (\`--stream-max-bytes-per-sec 0\`), ${runs} runs alternated, page cache warm: a full binary entries stream over loopback to a client that discards it ` +
        `(${fmt(streamed / 1e6)} MB on the wire), vs \`cat\` of the version's ${files.length} chunk files to /dev/null. MB/s of chunk-file bytes for both.`,
      '',
      mdTable(
        ['measurement', 'MB/s (median)', 'runs'],
        [
          [
            'dump stream (unthrottled)',
            fmt((median(dumps) * fileBytes) / streamed),
            dumps.map((x) => fmt((x * fileBytes) / streamed)).join(', '),
          ],
          ['cat', fmt(median(cats)), cats.map((x) => fmt(x)).join(', ')],
        ],
      ),
      '',
      '| goal | target | measured | status |',
      '|---|---|---|---|',
      `| reads during a dump: p99 | ≤ 1.5 × baseline + 0.1 ms (${fmt(bound)} ms) | ${fmt(during.p99Ms)} ms | ${p99Met ? 'met' : 'missed'} |`,
      `| dump throttle accuracy at the default 10 MB/s | within ±10% | ${fmt(offPct, 1)}% | ${Math.abs(offPct) <= 10 ? 'met' : 'missed'} |`,
      `| dump rate vs cat (unthrottled) | reported | ${fmt((median(dumps) * fileBytes) / streamed / median(cats))}× | met |`,
      '',
    ].join('\n')
    process.stdout.write(md)
  } finally {
    await node.kill9()
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
