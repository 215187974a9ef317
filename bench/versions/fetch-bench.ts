/**
 * Fetch benchmark: unthrottled fetchVersion throughput against curl on the same files
 * from the same nginx in the same run, then throttle accuracy at three rates.
 *
 *   node dist/bench/versions/fetch-bench.js [--quick] [--size-mb 512] [--dir /tmp] [--runs 5]
 *
 * Needs nginx (/usr/sbin/nginx or $ROSTORE_NGINX) and curl. Writes a markdown table to
 * stdout; progress goes to stderr. MB = 10^6 bytes.
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Registry } from 'prom-client'
import { isStoreError } from '../../common/errors'
import { fetchVersion } from '../../fetcher/fetch-job'
import { registerFetchMetrics } from '../../fetcher/fetch-metrics'
import { TokenBucket } from '../../fetcher/transfer/token-bucket'
import { makeBuildOutput, type Fixture } from '../../testkit/stores/fetch-fixture'
import { Nginx, nginxAvailable } from '../../testkit/peers/nginx'

const run = promisify(execFile)
const MB = 1e6
const MiB = 1 << 20
const CONCURRENCY = 4

interface Args {
  readonly quick: boolean
  readonly sizeMb: number
  readonly dir: string
  readonly runs: number
}

function parseArgs(argv: readonly string[]): Args {
  const value = (flag: string): string | undefined => {
    const i = argv.indexOf(flag)
    return i >= 0 ? argv[i + 1] : undefined
  }
  return {
    quick: argv.includes('--quick'),
    sizeMb: Number(value('--size-mb') ?? 512),
    dir: value('--dir') ?? tmpdir(),
    runs: Number(value('--runs') ?? 5),
  }
}

const log = (msg: string): void => void process.stderr.write(`${msg}\n`)
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

async function timed(fn: () => Promise<void>): Promise<number> {
  await run('sync') // start each run with no dirty pages of the previous one
  const t0 = performance.now()
  await fn()
  return (performance.now() - t0) / 1000
}

async function fsyncFiles(dir: string, names: readonly string[]): Promise<void> {
  for (const n of names) {
    const fh = await open(join(dir, n), 'r')
    await fh.sync()
    await fh.close()
  }
}

async function curl(fx: Fixture, url: string, outDir: string, parallel: boolean, fsync: boolean): Promise<void> {
  await mkdir(outDir)
  const names = ['metadata.json', ...fx.metadata.files.map((f) => f.name)]
  const args = ['--silent', '--show-error', '--fail', ...(parallel ? ['--parallel', '--parallel-max', String(CONCURRENCY)] : [])]
  for (const n of names) args.push('--output', join(outDir, n), `${url}node-0/${n}`)
  await run('curl', args, { maxBuffer: 1 << 20 })
  if (fsync) await fsyncFiles(outDir, names)
}

/** Fetches back to back under one bucket for `seconds`, aborting the last one. */
async function throttled(url: string, work: string, bytesPerSec: number, seconds: number): Promise<{ bytes: number; secs: number }> {
  const bucket = new TokenBucket(bytesPerSec)
  const metrics = registerFetchMetrics(new Registry())
  const ac = new AbortController()
  const t0 = performance.now()
  let stoppedAt = 0
  const timer = setTimeout(() => {
    // The window ends here, not after the aborted fetch has cleaned up its files.
    stoppedAt = performance.now()
    ac.abort()
  }, seconds * 1000)
  const removals: Promise<void>[] = []
  for (let i = 0; !ac.signal.aborted; i++) {
    const destDir = join(work, `throttle-${bytesPerSec}-${i}`)
    try {
      await fetchVersion({ source: url, nodeId: 0, destDir, bucket, signal: ac.signal, metrics, concurrency: CONCURRENCY })
      // In the background: the window should measure the bucket, not rm.
      removals.push(rm(destDir, { recursive: true, force: true }))
    } catch (err) {
      if (!isStoreError(err, 'RO_ABORTED')) throw err
    }
  }
  clearTimeout(timer)
  await Promise.all(removals)
  const secs = ((stoppedAt || performance.now()) - t0) / 1000
  const bytes = (await metrics.bytes.get()).values.reduce((a, v) => a + v.value, 0)
  return { bytes, secs }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  if (!nginxAvailable()) throw new Error('nginx not found (apt-get install nginx, or set ROSTORE_NGINX)')
  const work = await mkdtemp(join(args.dir, 'rostore-fetch-bench-'))
  let nginx: Nginx | undefined
  try {
    const chunks = 16
    const per = Math.round((args.sizeMb * MiB) / chunks)
    log(`generating ${chunks} chunks, ${args.sizeMb} MiB in ${work}`)
    const fx = await makeBuildOutput(join(work, 'serve'), {
      store: 'bench',
      chunks: Array.from({ length: chunks }, () => ({ dataBytes: per - per / 16, indexBytes: per / 16 })),
    })
    nginx = await Nginx.launch({ root: join(work, 'serve') })
    const url = nginx.url
    const total = fx.totalBytes
    const rows: string[] = []
    const row = (what: string, bytes: number, secs: number, extra = ''): void => {
      rows.push(`| ${what} | ${(bytes / MB).toFixed(0)} | ${secs.toFixed(2)} | ${(bytes / MB / secs).toFixed(0)} | ${extra} |`)
    }

    // Each case fills `dir`, which does not exist yet and is removed after the run.
    const cases: [string, (dir: string) => Promise<void>][] = [
      [
        `fetchVersion, ${CONCURRENCY} parallel, verify + fsync`,
        (dir) => fetchVersion({ source: url, nodeId: 0, destDir: dir, concurrency: CONCURRENCY }).then(() => undefined),
      ],
      [`curl --parallel-max ${CONCURRENCY}, no fsync`, (dir) => curl(fx, url, dir, true, false)],
      [`curl --parallel-max ${CONCURRENCY} + fsync`, (dir) => curl(fx, url, dir, true, true)],
      ['curl sequential, no fsync', (dir) => curl(fx, url, dir, false, false)],
    ]
    // Interleaved (round i runs every case once), so drift in the machine's state hits all.
    const times = new Map<string, number[]>(cases.map(([what]) => [what, []]))
    // Round 0 warms up the JIT, nginx's open-file state and the page cache; not counted.
    for (let i = -1; i < args.runs; i++) {
      for (const [what, fn] of cases) {
        const dir = join(work, 'run')
        const secs = await timed(() => fn(dir))
        await rm(dir, { recursive: true, force: true })
        if (i >= 0) times.get(what)?.push(secs)
        log(`${what}: ${i < 0 ? 'warm-up' : `run ${i + 1}`} ${secs.toFixed(2)} s`)
      }
    }
    const fetchSecs = median(times.get(cases[0]?.[0] ?? '') ?? [])
    for (const [what, ts] of times) {
      const secs = median(ts)
      row(what, total, secs, what === cases[0]?.[0] ? '' : `fetchVersion throughput = ${(secs / fetchSecs).toFixed(2)}× this`)
    }

    const seconds = args.quick ? 5 : 20
    for (const rate of [10, 40, 100]) {
      log(`throttle ${rate} MB/s for ${seconds} s`)
      const r = await throttled(url, work, rate * MB, seconds)
      const got = r.bytes / r.secs
      row(
        `throttled to ${rate} MB/s (node bucket, ${seconds} s)`,
        r.bytes,
        r.secs,
        `${(((got - rate * MB) / (rate * MB)) * 100).toFixed(1)}% off target`,
      )
    }

    process.stdout.write(
      `\nFetch benchmark: ${(total / MB).toFixed(0)} MB in ${fx.metadata.files.length} files from nginx on loopback, median of ${args.runs} runs (unthrottled); ${cpus().length} CPUs, load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} at the end\n\n`,
    )
    process.stdout.write('| measurement | MB | seconds | MB/s | note |\n|---|---:|---:|---:|---|\n')
    process.stdout.write(rows.join('\n') + '\n')
  } finally {
    await nginx?.dispose()
    await rm(work, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`)
  process.exitCode = 1
})
