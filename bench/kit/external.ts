/**
 * The benchmarks written beside this suite (fetch-, swap-, push-, hadoop-, ray-bench): each
 * runs as its own process; its markdown (stdout) goes into RESULTS.md as it is, its
 * progress (stderr) into bench/work/logs/<name>.log, and the goal rows are read back from
 * its tables.
 */
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ensureDir, workRoot } from './data'
import { goal, type BenchContext, type GoalRow, type Section } from './report'
import { fmt } from './stats'
import { log, runTimed } from './system'

export interface External {
  readonly id:
    'fetch' | 'swap' | 'push' | 'dump' | 'soak' | 'chaos' | 'hadoop' | 'ray' | 'objstore' | 'cold' | 'hardening' | 'partitions' | 'delta'
  readonly file: string
  readonly title: string
  /** Flags for this run (--quick is always passed in quick mode). */
  readonly args: (ctx: BenchContext) => string[]
  readonly timeoutSec: (ctx: BenchContext) => number
  readonly goals: (markdown: string | undefined, reason?: string) => GoalRow[]
}

export const EXTERNALS: readonly External[] = [
  {
    id: 'fetch',
    file: 'versions/fetch-bench.js',
    title: '4a. Fetch vs curl, throttle accuracy',
    args: (ctx) => (ctx.quick ? ['--quick', '--size-mb', '128', '--runs', '2'] : ['--runs', String(ctx.runs)]),
    timeoutSec: (ctx) => (ctx.quick ? 180 : 1800),
    goals: fetchGoals,
  },
  {
    id: 'swap',
    file: 'versions/swap-bench.js',
    title: '4b. Swap and rollback latency vs store size; node RSS',
    args: (ctx) => (ctx.quick ? ['--quick', '--big-gb', '0.5', '--iterations', '50'] : []),
    timeoutSec: (ctx) => (ctx.quick ? 240 : 3600),
    goals: swapGoals,
  },
  {
    id: 'push',
    file: 'versions/push-bench.js',
    title: '4c. Push to a local cluster (fetch + swap phases)',
    args: (ctx) => (ctx.quick ? ['--quick', '--runs', '1'] : ['--runs', String(ctx.runs)]),
    timeoutSec: (ctx) => (ctx.quick ? 600 : 3 * 3600),
    goals: pushReadsGoals,
  },
  {
    id: 'dump',
    file: 'versions/dump-bench.js',
    title: '4d. Dump: live reads under a dump, throttle, rate vs cat',
    args: (ctx) => (ctx.quick ? ['--quick', '--runs', '2'] : ['--runs', String(ctx.runs)]),
    timeoutSec: (ctx) => (ctx.quick ? 300 : 1800),
    goals: dumpGoals,
  },
  {
    id: 'soak',
    file: 'versions/soak-bench.js',
    title: '4e. Push soak: memory and open files over many pushes',
    args: (ctx) => (ctx.quick ? ['--quick'] : []),
    timeoutSec: (ctx) => (ctx.quick ? 600 : 2 * 3600),
    goals: soakGoals,
  },
  {
    id: 'chaos',
    file: 'versions/chaos-bench.js',
    title: '4h. Push chaos: pushes and rollbacks under random faults (Jepsen-style)',
    args: (ctx) => (ctx.quick ? ['--quick', '--seed', String(ctx.seed)] : ['--seed', String(ctx.seed)]),
    timeoutSec: (ctx) => (ctx.quick ? 900 : 3 * 3600),
    goals: chaosGoals,
  },
  {
    id: 'objstore',
    file: 'versions/object-storage-bench.js',
    title: '4f. Object storage: push from S3 vs nginx, build from S3 vs local Parquet',
    args: (ctx) => (ctx.quick ? ['--quick', '--runs', '1'] : ['--runs', String(Math.min(ctx.runs, 2))]),
    timeoutSec: (ctx) => (ctx.quick ? 900 : 2 * 3600),
    goals: () => [],
  },
  {
    id: 'cold',
    file: 'cold/cold-bench.js',
    title: '4g. Stores larger than memory: cold reads vs fio',
    args: (ctx) => (ctx.quick ? ['--quick'] : []),
    timeoutSec: (ctx) => (ctx.quick ? 1200 : 3600),
    goals: coldGoals,
  },
  {
    id: 'hardening',
    file: 'serve/hardening-bench.js',
    title: '4i. Hardening: memory held by clients that never finish, cost of the index check on misses',
    args: (ctx) => (ctx.quick ? ['--quick'] : []),
    timeoutSec: () => 900,
    goals: () => [],
  },
  {
    id: 'partitions',
    file: 'versions/partition-bench.js',
    title: '4j. Partition files: the build output read once per push, rebalance 3 → 5 without a build',
    args: (ctx) => (ctx.quick ? ['--quick'] : ['--records', String(ctx.records)]),
    timeoutSec: (ctx) => (ctx.quick ? 900 : 3600),
    goals: tableGoals('partitions'),
  },
  {
    id: 'delta',
    file: 'versions/delta-bench.js',
    title: '4k. Delta pushes: patches against the live version vs full pushes',
    args: (ctx) => (ctx.quick ? ['--quick'] : ['--records', String(ctx.records)]),
    timeoutSec: (ctx) => (ctx.quick ? 900 : 3600),
    goals: tableGoals('delta'),
  },
  {
    id: 'hadoop',
    file: 'build/hadoop-bench.js',
    title: 'Hadoop Streaming engine vs local build',
    args: (ctx) => (ctx.quick ? ['--quick', '--records', String(ctx.records)] : ['--records', String(ctx.records)]),
    timeoutSec: (ctx) => (ctx.quick ? 180 : 3600),
    goals: () => [],
  },
  {
    id: 'ray',
    file: 'build/ray-bench.js',
    title: 'Ray engine vs local build',
    args: (ctx) => (ctx.quick ? ['--quick', '--records', String(ctx.records)] : ['--records', String(ctx.records)]),
    timeoutSec: (ctx) => (ctx.quick ? 600 : 3600),
    goals: () => [],
  },
]

export async function runExternal(ctx: BenchContext, ext: External): Promise<Section> {
  const script = join(__dirname, '..', ext.file)
  const source = `bench/${ext.file.replace(/\.js$/, '.ts')}`
  if (!existsSync(script)) {
    const reason = `${source} is not there (or was not compiled)`
    return { title: ext.title, markdown: `Not run: ${reason}.\n`, goals: ext.goals(undefined, reason) }
  }
  const args = ext.args(ctx)
  log(`${ext.id}: node ${source.replace(/\.ts$/, '.js')} ${args.join(' ')}`)
  const logFile = join(ensureDir(join(workRoot(), 'logs')), `${ext.id}.log`)
  try {
    const t = await runTimed(process.execPath, [script, ...args], { timeoutMs: ext.timeoutSec(ctx) * 1000 })
    writeFileSync(logFile, t.stderr)
    const md = t.stdout.trim()
    return {
      title: ext.title,
      markdown: `Run: \`node ${source.replace(/\.ts$/, '.js')} ${args.join(' ')}\` (${fmt(t.wallSecs)} s; its progress log: bench/work/logs/${ext.id}.log).\n\n${md}\n`,
      goals: ext.goals(md),
    }
  } catch (err) {
    const msg = (err as Error).message
    writeFileSync(logFile, msg)
    const reason = `${source} failed: ${msg.split('\n').slice(-4).join(' / ').slice(0, 500)}`
    log(`${ext.id}: ${reason}`)
    return { title: ext.title, markdown: `Not run: ${reason}\n`, goals: ext.goals(undefined, reason) }
  }
}

// ---------------------------------------------------------------------------------------
// reading goal rows back from the benchmarks' markdown

export interface MdTable {
  readonly header: string[]
  readonly rows: string[][]
}

export function parseTables(md: string): MdTable[] {
  const tables: MdTable[] = []
  const lines = md.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]?.trim() ?? ''
    const sep = lines[i + 1]?.trim() ?? ''
    if (!line.startsWith('|') || !/^\|[\s:|-]+\|$/.test(sep)) continue
    const cells = (l: string): string[] =>
      l
        .trim()
        .replace(/^\||\|$/g, '')
        .split('|')
        .map((c) => c.trim())
    const header = cells(line)
    const rows: string[][] = []
    let j = i + 2
    for (; j < lines.length && (lines[j]?.trim() ?? '').startsWith('|'); j++) rows.push(cells(lines[j] as string))
    tables.push({ header, rows })
    i = j - 1
  }
  return tables
}

function column(t: MdTable, name: RegExp): number {
  return t.header.findIndex((h) => name.test(h))
}

export function fetchGoals(md: string | undefined, reason?: string): GoalRow[] {
  const notRun = (g: string, target: string): GoalRow =>
    goal(g === 'Fetch vs curl' ? 'fetch' : 'throttle', g, target, `not run: ${reason ?? 'no table'}`, undefined)
  const t = md ? parseTables(md).find((x) => column(x, /^MB\/s$/) >= 0 && column(x, /measurement/) >= 0) : undefined
  if (!t) return [notRun('Fetch vs curl', '≥ 0.9×'), notRun('Throttle accuracy', 'within ±10%')]
  const mbs = column(t, /^MB\/s$/)
  const name = column(t, /measurement/)
  const rate = (r: string[]): number => Number((r[mbs] ?? '').replace(/,/g, ''))
  const ours = t.rows.find((r) => /^fetchVersion/.test(r[name] ?? ''))
  const curls = t.rows.filter((r) => /^curl/.test(r[name] ?? ''))
  const goals: GoalRow[] = []
  if (ours && curls.length) {
    // Like for like: curl with the same parallelism and an fsync of what it wrote.
    const like = curls.find((r) => /parallel/.test(r[name] ?? '') && /\+ fsync/.test(r[name] ?? '')) ?? curls[0]!
    const all = curls.map((r) => `${fmt(rate(ours) / rate(r))}× ${r[name]}`).join('; ')
    const ratio = rate(ours) / rate(like)
    goals.push(
      goal(
        'fetch',
        'Fetch rate vs curl from nginx',
        `≥ 0.9× (${like[name]})`,
        `${fmt(ratio)}× (${fmt(rate(ours))} vs ${fmt(rate(like))} MB/s); all: ${all}`,
        ratio >= 0.9,
      ),
    )
  } else goals.push(goal('fetch', 'Fetch rate vs curl from nginx', '≥ 0.9×', 'rows not found in fetch-bench output', undefined))
  const throttled = t.rows.filter((r) => /throttled/.test(r[name] ?? ''))
  if (throttled.length) {
    const offs = throttled.map((r) => Number(/(-?\d+(?:\.\d+)?)% off target/.exec(r.join(' '))?.[1] ?? NaN))
    const worst = Math.max(...offs.map(Math.abs))
    goals.push(
      goal(
        'throttle',
        'Throttle accuracy',
        'within ±10%',
        `${throttled.map((r, k) => `${/(\d+) MB\/s/.exec(r[name] ?? '')?.[1] ?? '?'} MB/s: ${offs[k]}%`).join(', ')}`,
        Number.isFinite(worst) ? worst <= 10 : undefined,
      ),
    )
  } else goals.push(goal('throttle', 'Throttle accuracy', 'within ±10%', 'rows not found in fetch-bench output', undefined))
  return goals
}

export function swapGoals(md: string | undefined, reason?: string): GoalRow[] {
  const t = md ? parseTables(md).find((x) => column(x, /^op$/) >= 0 && column(x, /p99/) >= 0) : undefined
  if (!t)
    return [goal('swap', 'Swap and rollback p99, independent of store size', '< 10 ms', `not run: ${reason ?? 'no table'}`, undefined)]
  const op = column(t, /^op$/)
  const store = column(t, /^store$/)
  const size = column(t, /MiB/)
  const server = column(t, /server p99/)
  const rtt = column(t, /rtt p99/)
  const rows = t.rows.filter((r) => /^(swap|rollback)$/.test(r[op] ?? ''))
  const num = (r: string[], c: number): number => (c >= 0 ? Number((r[c] ?? '').replace(/,/g, '')) : NaN)
  // Judged on the client's round trip when the table has one (it includes the server's share).
  const judged = rows.map((r) => (rtt >= 0 ? num(r, rtt) : num(r, server)))
  const worst = Math.max(...judged)
  const text = rows
    .map(
      (r) => `${r[op]} ${r[store]}${size >= 0 ? ` (${r[size]} MiB)` : ''}: server ${r[server] ?? '?'} / rtt ${rtt >= 0 ? r[rtt] : '?'} ms`,
    )
    .join('; ')
  return [
    goal(
      'swap',
      'Swap and rollback p99, independent of store size',
      `< 10 ms (${rtt >= 0 ? 'admin round trip' : 'server'} p99)`,
      text || 'rows not found',
      rows.length ? worst < 10 : undefined,
    ),
    swapReadsGoal(md ?? ''),
  ]
}

/** The goal row swap-bench prints for reads during its swaps (bench/versions/swap-reads.ts). */
function swapReadsGoal(md: string): GoalRow {
  const t = parseTables(md).find((x) => column(x, /^goal$/) >= 0 && x.rows.some((r) => /^reads during swaps/.test(r[0] ?? '')))
  const r = t?.rows.find((row) => /^reads during swaps/.test(row[0] ?? ''))
  const text = 'Reads during 100 swaps and rollbacks: p99'
  if (!r) return goal('swap-reads-p99', text, 'within noise of no swaps', 'not run: no table', undefined)
  return goal('swap-reads-p99', text, r[1] ?? '', r[2] ?? '', r[3] === 'met')
}

/** The goal rows push-bench prints for reads during a push (bench/versions/push-reads.ts). */
export function pushReadsGoals(md: string | undefined, reason?: string): GoalRow[] {
  const t = md
    ? parseTables(md).find((x) => column(x, /^goal$/) >= 0 && x.rows.some((r) => /^reads during a push/.test(r[0] ?? '')))
    : undefined
  const names = ['largest gap', 'p99'] as const
  return names.map((n) => {
    const r = t?.rows.find((row) => (row[0] ?? '').endsWith(n))
    const text = `Reads during a push: ${n}`
    if (!t || !r)
      return goal(
        `push-reads-${n === 'p99' ? 'p99' : 'gap'}`,
        text,
        n === 'p99' ? 'within noise' : '≤ 50 ms',
        `not run: ${reason ?? 'no table'}`,
        undefined,
      )
    return goal(`push-reads-${n === 'p99' ? 'p99' : 'gap'}`, text, r[1] ?? '', r[2] ?? '', r[3] === 'met')
  })
}

/** The goal row soak-bench prints (bench/versions/soak-bench.ts). */
export function soakGoals(md: string | undefined, reason?: string): GoalRow[] {
  const t = md ? parseTables(md).find((x) => column(x, /^goal$/) >= 0 && x.rows.some((r) => /^push soak/.test(r[0] ?? ''))) : undefined
  const r = t?.rows.find((row) => /^push soak/.test(row[0] ?? ''))
  const text = 'Push soak: RssAnon, heap and open files flat after warm-up'
  if (!r) return [goal('push-soak', text, 'flat', `not run: ${reason ?? 'no table'}`, undefined)]
  return [goal('push-soak', text, r[1] ?? 'flat', r[2] ?? '', r[3] === 'met')]
}

/** Every row of a bench's `goal | target | measured | status` table, as printed. */
export function tableGoals(id: string): (md: string | undefined, reason?: string) => GoalRow[] {
  return (md, reason) => {
    const t = md ? parseTables(md).find((x) => column(x, /^goal$/) >= 0) : undefined
    if (!t) return [goal(id, `${id}: the bench's goals`, 'see the section', `not run: ${reason ?? 'no table'}`, undefined)]
    return t.rows.map((r, i) =>
      goal(`${id}-${i}`, r[0] ?? '', r[1] ?? '', r[2] ?? '', r[3] === 'met' ? true : r[3] === 'missed' ? false : undefined),
    )
  }
}

/** The goal row chaos-bench prints (bench/versions/chaos-bench.ts). */
export function chaosGoals(md: string | undefined, reason?: string): GoalRow[] {
  const t = md ? parseTables(md).find((x) => column(x, /^goal$/) >= 0 && x.rows.some((r) => /^push chaos/.test(r[0] ?? ''))) : undefined
  const r = t?.rows.find((row) => /^push chaos/.test(row[0] ?? ''))
  const text = 'Push chaos: one version, decided, converged within 30 s, nothing staged left'
  if (!r) return [goal('push-chaos', text, '0 violations', `not run: ${reason ?? 'no table'}`, undefined)]
  return [goal('push-chaos', text, r[1] ?? '0 violations', r[2] ?? '', r[3] === 'met')]
}

/** The goal rows dump-bench prints (bench/versions/dump-bench.ts). */
export function dumpGoals(md: string | undefined, reason?: string): GoalRow[] {
  const t = md
    ? parseTables(md).find((x) => column(x, /^goal$/) >= 0 && x.rows.some((r) => /^reads during a dump/.test(r[0] ?? '')))
    : undefined
  const specs = [
    ['dump-reads-p99', 'Reads during a dump at the default throttle: p99', /^reads during a dump/, 'within noise'],
    ['dump-throttle', 'Dump throttle accuracy (default 10 MB/s)', /^dump throttle/, 'within ±10%'],
    ['dump-vs-cat', 'Dump rate unthrottled vs cat of the same files', /^dump rate vs cat/, 'reported'],
  ] as const
  return specs.map(([id, text, re, target]) => {
    const r = t?.rows.find((row) => re.test(row[0] ?? ''))
    if (!t || !r) return goal(id, text, target, `not run: ${reason ?? 'no table'}`, undefined)
    return goal(id, text, r[1] ?? target, r[2] ?? '', r[3] === 'met')
  })
}

/** The cold-read goals, from the goal table cold-bench.ts prints (its own verdicts). */
export function coldGoals(md: string | undefined, reason?: string): GoalRow[] {
  const ids: [string, string, string][] = [
    ['cold-inproc', 'In-process cold get, one thread, vs fio QD1', '≥ 0.8×'],
    ['cold-resp', 'Node cold RESP GET, 64 connections, vs fio QD32', '≥ 0.6×'],
    ['cold-mget', 'Node cold HTTP multi-get of 100 (keys/s), vs fio QD32', '≥ 0.6×'],
    ['cold-bytes', 'Device bytes per cold lookup, 1 KiB values', '≤ 2 pages'],
    ['cold-hit', 'Data cached at the end of each cold row (bounds its hit ratio)', '< 25%'],
    ['cold-lmdb', 'In-process cold get, one thread, vs LMDB get (peer) on the same records, cold file', '≥ 1.0×'],
    ['cold-push', 'Push of a full new version under Zipf reads: hot p99 and hit ratio during and after, vs before', '≤ 1.5×, ≥ −10 points'],
  ]
  const t = md ? parseTables(md).find((x) => column(x, /^goal id$/) >= 0) : undefined
  return ids.map(([id, text, target]) => {
    const row = t?.rows.find((r) => r[0] === id)
    if (!row) return goal(id, text, target, `not run: ${reason ?? 'no goal table'}`, undefined)
    return goal(id, text, target, row[3] ?? '', row[4] === 'met')
  })
}
