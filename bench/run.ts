/**
 * `npm run bench`: the whole benchmark suite, writing bench/RESULTS.md.
 *
 *   node dist/bench/run.js [--quick] [--scale 10M] [--only build,replication,lookup,serve,resp,fetch,swap,push,dump,soak,chaos,objstore,cold,hardening,partitions,delta,memory,hadoop,ray]
 *                          [--runs N] [--seed N] [--out FILE]
 *   node dist/bench/run.js --render [FILE]   re-render FILE (default bench/RESULTS.md) from the
 *                                             sections the last run saved, e.g. after editing analysis.ts
 *
 * --quick: 100k records per shape, 2 runs, short load phases (the whole suite in a few
 * minutes). Default: 1M records per shape, 3 runs. --scale N: N records per shape (10M+).
 * Installs the Debian peers it needs (tinycdb, redis-server, redis-tools, time) with
 * apt-get when they are missing; a peer that cannot be installed is reported as not run
 * with the reason. Work files live under bench/work/ (generated data is kept and reused).
 */
import { readFileSync, statfsSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { packageRoot } from '../common/paths'
import { explain, noteOnMet } from './kit/analysis'
import { runBuildBench } from './build/build-bench'
import { REPLICATION_TITLE, runReplicationBench } from './build/replication-bench'
import { DEFAULT_SEED, ensureDir, label, parseCount, shapes, workRoot } from './kit/data'
import { EXTERNALS, runExternal } from './kit/external'
import { COMPRESSION_TITLE, runCompressionBench } from './lookup/compression-bench'
import { compressionRespRows } from './serve/compression-resp'
import { compressionHttpRows } from './serve/compression-http'
import { compressionColdRows } from './cold/compression-cold'
import { runLookupBench } from './lookup/lookup-bench'
import { runMemoryBench } from './lookup/memory-bench'
import { errorText, notRunSection, type BenchContext, type GoalRow, type Section } from './kit/report'
import { runRespServeBench, runServeBench } from './serve/serve-bench'
import { mdTable } from './kit/stats'
import { log, machineFacts, toolVersion, which } from './kit/system'

const ALL = [
  'build',
  'replication',
  'lookup',
  'compression',
  'serve',
  'resp',
  'fetch',
  'swap',
  'push',
  'dump',
  'soak',
  'chaos',
  'objstore',
  'cold',
  'hardening',
  'partitions',
  'delta',
  'memory',
  'hadoop',
  'ray',
] as const
type BenchId = (typeof ALL)[number]

interface Args {
  readonly quick: boolean
  readonly records: number
  readonly only: readonly BenchId[]
  readonly runs: number
  readonly seed: number
  readonly out: string
}

function parseArgs(argv: readonly string[]): Args {
  const value = (flag: string): string | undefined => {
    const i = argv.indexOf(flag)
    if (i < 0) return undefined
    const v = argv[i + 1]
    if (v === undefined || v.startsWith('--')) throw new Error(`${flag} needs a value`)
    return v
  }
  const known = new Set(['--quick', '--scale', '--only', '--runs', '--seed', '--out', '--help', '--render', '--update'])
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string
    if (a.startsWith('--') && !known.has(a)) throw new Error(`unknown option ${a}`)
    if (['--scale', '--only', '--runs', '--seed', '--out'].includes(a)) i++
  }
  const quick = argv.includes('--quick')
  const scale = value('--scale')
  const only = value('--only')
  const ids = only
    ? only
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [...ALL]
  for (const id of ids) if (!(ALL as readonly string[]).includes(id)) throw new Error(`--only: unknown benchmark ${id} (${ALL.join(', ')})`)
  const runs = Number(value('--runs') ?? (quick ? 2 : 3))
  if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs must be a positive integer')
  return {
    quick,
    records: scale ? parseCount(scale) : quick ? 100_000 : 1_000_000,
    only: ids as BenchId[],
    runs,
    seed: Number(value('--seed') ?? DEFAULT_SEED),
    out: value('--out') ?? join(packageRoot(__dirname), 'bench', 'RESULTS.md'),
  }
}

function npmVersion(name: string): string {
  try {
    const file = join(packageRoot(__dirname), 'node_modules', name, 'package.json')
    return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version
  } catch {
    return 'not installed'
  }
}

function sqliteVersion(): string {
  try {
    const Database = require('better-sqlite3') as typeof import('better-sqlite3')
    const db = new Database(':memory:')
    const v = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v
    db.close()
    return v
  } catch {
    return 'n/a'
  }
}

function debVersion(pkg: string): string {
  const v = toolVersion('dpkg-query', ['-W', '-f', '${Version}', pkg])
  return v && !/no packages found/i.test(v) ? v : 'not installed'
}

/** The machine table's rows: measured now, or (re-rendering) those saved with the sections. */
function machineRows(args: Args, startLoad: number[], started: Date, rerender: boolean): string[][] {
  const m = machineFacts()
  const end = loadavg()
  const rows = [
    [
      'date',
      rerender ? started.toISOString() : `${started.toISOString()} (took ${((Date.now() - started.getTime()) / 60000).toFixed(1)} min)`,
    ],
    [
      'mode',
      `${args.quick ? 'quick' : 'full'}: ${label(args.records)} records per shape, ${args.runs} runs per measurement, seed ${args.seed}`,
    ],
    ['CPU', `${m.cores} × ${m.cpuModel}`],
    ['memory', `${m.memGiB.toFixed(1)} GiB`],
    ['OS / kernel', `${m.os} / ${m.kernel}`],
    ['Node.js', m.node],
    [
      'load average (1 min) at start' + (rerender ? '' : ' / end'),
      `${startLoad[0]?.toFixed(2)}${rerender ? '' : ` / ${end[0]?.toFixed(2)}`} (other work on the machine shows here; per section below)`,
    ],
    ['lmdb (npm)', npmVersion('lmdb')],
    ['better-sqlite3 (npm) / SQLite', `${npmVersion('better-sqlite3')} / ${sqliteVersion()}`],
    ['autocannon (npm)', npmVersion('autocannon')],
    ['tinycdb (Debian)', debVersion('tinycdb')],
    ['redis-server / redis-tools (Debian)', `${debVersion('redis-server')} / ${debVersion('redis-tools')}`],
    [
      'nginx / curl',
      `${which('nginx') ? (toolVersion('nginx', ['-v']) ?? '?') : 'not installed'} / ${toolVersion('curl', ['--version'])?.split(' ').slice(0, 2).join(' ') ?? 'not installed'}`,
    ],
  ]
  return rows
}

function goalsTable(goals: readonly GoalRow[]): string {
  const mark = (s: GoalRow['status']): string => (s === 'met' ? '✅ met' : s === 'missed' ? '❌ missed' : '⚪ not run')
  return mdTable(
    ['goal', 'target', 'measured (ratio = rostore ÷ peer, same run)', 'status'],
    goals.map((g) => [g.goal, g.target, g.measured, mark(g.status)]),
    ['l', 'l', 'l', 'l'],
  )
}

/**
 * Rough disk need of a run: per shape the TSV, the RESP copy, four stores (rostore plain
 * and snappy, LMDB, SQLite) and the largest build output in flight, about 9× the payload.
 */
function warnDiskSpace(ctx: BenchContext): void {
  const need = ctx.shapes.reduce((n, s) => n + s.records * (s.valueBytes + 12) * 9, 0)
  try {
    const st = statfsSync(ensureDir(workRoot()))
    const free = st.bavail * st.bsize
    if (need > free)
      log(`warning: this run may need ~${(need / 2 ** 30).toFixed(0)} GiB under ${workRoot()}, ${(free / 2 ** 30).toFixed(0)} GiB are free`)
  } catch {
    // statfs unavailable: no warning
  }
}

/**
 * The sections a results file was rendered from, kept beside it in the repository (not in
 * work/, which a new machine does not have), so --update and --render work anywhere.
 */
function savedFile(out: string): string {
  return join(dirname(out), `${basename(out, '.md')}.sections.json`)
}

function render(args: Args, sections: readonly Section[], pending: readonly string[], machine: readonly (readonly string[])[]): string {
  const goals = sections.flatMap((s) => s.goals)
  const missedIds = [...new Set(goals.filter((g) => g.status !== 'met').map((g) => g.id))]
  const why = missedIds
    .map((id) =>
      explain(
        id,
        goals.filter((g) => g.id === id),
      ),
    )
    .filter((t) => t !== '')
  const out: string[] = [
    '# rostore benchmark results',
    '',
    `Generated by \`npm run bench${args.quick ? ' -- --quick' : ''}\` (bench/run.ts); do not edit by hand — rerun instead. ` +
      'Every claim is a ratio against a peer measured in the same run on the same generated data; how each peer is measured is in bench/README.md.',
    '',
    '## Machine',
    '',
    mdTable(['', ''], machine, ['l', 'l']),
    '',
    '## Goals',
    '',
    goals.length ? goalsTable(goals) : 'No goal measured in this run.',
    '',
  ]
  if (pending.length) out.push(`Still running or not started when this file was written: ${pending.join(', ')}.`, '')
  for (const s of sections) out.push(`## ${s.title}`, '', s.markdown.trim(), '')
  out.push('## Why goals were missed, and what was done', '')
  out.push(why.length ? why.join('\n\n') : 'Every goal measured in this run was met.', '')
  const beside = [...new Set(goals.map((g) => g.id))]
    .map((id) =>
      noteOnMet(
        id,
        goals.filter((g) => g.id === id),
      ),
    )
    .filter((t) => t !== '')
  if (beside.length) out.push('## Measured beside met goals', '', beside.join('\n\n'), '')
  return `${out.join('\n')}\n`
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2)
  if (argv.includes('--help')) {
    process.stdout.write(
      `usage: node dist/bench/run.js [--quick] [--scale 10M] [--only ${ALL.join(',')}] [--runs N] [--seed N] [--out FILE]\n`,
    )
    return
  }
  if (argv.includes('--render')) {
    // Re-render RESULTS.md from the saved sections (after editing bench/kit/analysis.ts).
    const out = argv[argv.indexOf('--render') + 1] ?? join(packageRoot(__dirname), 'bench', 'RESULTS.md')
    const saved = JSON.parse(readFileSync(savedFile(out), 'utf8')) as {
      args: Args
      sections: Section[]
      startLoad: number[]
      started: string
      pending: string[]
      machine?: string[][]
    }
    const started = new Date(saved.started)
    const machine = saved.machine ?? machineRows(saved.args, saved.startLoad, started, true)
    writeFileSync(out, render(saved.args, saved.sections, saved.pending, machine))
    log(`re-rendered ${out}`)
    return
  }
  const args = parseArgs(argv)
  const started = new Date()
  const startLoad = loadavg()
  const ctx: BenchContext = { quick: args.quick, records: args.records, shapes: shapes(args.records), seed: args.seed, runs: args.runs }
  const plan: { id: BenchId; title: string; run: () => Promise<Section> }[] = []
  for (const id of args.only) {
    const ext = EXTERNALS.find((e) => e.id === id)
    if (ext) plan.push({ id, title: ext.title, run: () => runExternal(ctx, ext) })
    else if (id === 'build') plan.push({ id, title: '1. Build', run: () => runBuildBench(ctx) })
    else if (id === 'replication') plan.push({ id, title: REPLICATION_TITLE, run: () => runReplicationBench(ctx) })
    else if (id === 'lookup') plan.push({ id, title: '2. In-process lookups (one thread)', run: () => runLookupBench(ctx) })
    else if (id === 'compression')
      plan.push({
        id,
        title: COMPRESSION_TITLE,
        run: () => runCompressionBench(ctx, [compressionRespRows, compressionHttpRows, compressionColdRows]),
      })
    else if (id === 'serve') plan.push({ id, title: '3. Serving over loopback', run: () => runServeBench(ctx) })
    else if (id === 'resp') plan.push({ id, title: '3b. Serving over RESP (the Redis protocol)', run: () => runRespServeBench(ctx) })
    else if (id === 'memory') plan.push({ id, title: '5. Memory', run: () => runMemoryBench(ctx) })
  }
  warnDiskSpace(ctx)
  // --update: rerun only the --only sections (after a change to a hot path) and keep the
  // other sections of the last run, which must have the same mode and size.
  const sections: Section[] = []
  // An update keeps the machine table of the run it updates (most sections are that run's)
  // and adds a row naming what was rerun, when, on which kernel (one row per update).
  let keptMachine: string[][] | undefined
  if (argv.includes('--update')) {
    const saved = JSON.parse(readFileSync(savedFile(args.out), 'utf8')) as { args: Args; sections: Section[]; machine?: string[][] }
    if (saved.args.quick !== args.quick || saved.args.records !== args.records)
      throw new Error('--update: the last run had another mode or size; run the whole suite')
    sections.push(...saved.sections)
    keptMachine = saved.machine
  }
  const machineNow = (): string[][] => {
    if (!keptMachine) return machineRows(args, startLoad, started, false)
    const kernel = machineFacts().kernel
    const rerun = `${args.only.join(', ')} on ${started.toISOString()} (kernel ${kernel}, load ${startLoad[0]?.toFixed(2)} at the start)`
    return [...keptMachine, ['rerun with --update', rerun]]
  }
  log(`mode ${args.quick ? 'quick' : 'full'}, ${label(args.records)} records per shape, ${args.runs} runs; writing ${args.out}`)
  for (let i = 0; i < plan.length; i++) {
    const p = plan[i]!
    const t0 = performance.now()
    const load0 = loadavg()[0] ?? NaN
    log(`=== ${p.title}`)
    let section: Section
    try {
      section = await p.run()
    } catch (err) {
      log(`${p.id} failed: ${(err as Error).stack ?? String(err)}`)
      section = notRunSection(p.title, `the benchmark failed: ${errorText(err)}`)
    }
    const secs = (performance.now() - t0) / 1000
    const load1 = loadavg()[0] ?? NaN
    const done = {
      ...section,
      markdown: `_${argv.includes('--update') ? `Rerun ${new Date().toISOString()} with --update; ` : ''}${secs.toFixed(0)} s; 1-minute load average ${load0.toFixed(1)} at the start, ${load1.toFixed(1)} at the end of this section (${cpus().length} cores)._\n\n${section.markdown}`,
    }
    const at = sections.findIndex((x) => x.title === section.title)
    if (at >= 0) sections[at] = done
    else sections.push(done)
    log(`=== ${p.title}: ${secs.toFixed(0)} s`)
    // Written after every section, so a long run leaves its results so far.
    const pending = plan.slice(i + 1).map((x) => x.id)
    const machine = machineNow()
    writeFileSync(args.out, render(args, sections, pending, machine))
    writeFileSync(
      savedFile(args.out),
      JSON.stringify({ args, sections, startLoad, started: started.toISOString(), pending, machine }, null, 1),
    )
  }
  log(`wrote ${args.out} in ${((Date.now() - started.getTime()) / 60000).toFixed(1)} min`)
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
