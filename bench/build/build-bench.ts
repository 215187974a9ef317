/**
 * Measurement 1 — build: records/s, MB/s, output bytes per record and peak RSS of
 * `rostore build` (all cores, and --workers 1) against, in the same run on the same
 * records: LMDB bulk load, SQLite bulk load (WITHOUT ROWID, one transaction) and tinycdb
 * `cdb -c`. Every system runs as its own process, timed from spawn to exit, after a
 * `sync`; runs are interleaved (round r runs every system once) so drift in the machine's
 * state hits all of them alike. MB/s is TSV input bytes (10^6) per second.
 */
import { mkdirSync, rmSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { ensureDataset, ensureDir, workRoot, type Dataset } from '../kit/data'
import { runInputBench } from './input-bench'
import { buildCdb, cdbTooLarge, ensureCdb, ensureCdbInput } from '../peers/cdb'
import { lmdbModule } from '../peers/lmdb'
import { sqliteModule } from '../peers/sqlite'
import { goal, type BenchContext, type GoalRow, type Section } from '../kit/report'
import { rostoreBuild } from '../kit/rostore'
import { fmt, fmtRatio, fmtSpread, mdTable, summarize } from '../kit/stats'
import { duBytes, ensureGnuTime, log, runTimed, syncDisks, type TimedResult } from '../kit/system'
import { STAGES, emptyStageTimes, type StageTimes } from '../../builder/stage-times'

interface System {
  readonly id: string
  readonly label: string
  /** Why it cannot run, if it cannot. */
  readonly skip?: string
  readonly run: (out: string) => Promise<TimedResult>
}

interface Measured {
  readonly system: System
  readonly secs: number[]
  readonly rss: number[]
  readonly outBytes: number[]
  /** rostore rows: the build summary's stage times, one per run. */
  readonly stages: StageTimes[]
  readonly error?: string
}

/** Records/s per core of rostore before the batched builder (bench/RESULTS.md of 2026-11-29, 1M × 100 B, --workers 1). */
const PER_CORE_BEFORE = 265_813
/** rostore's default --memory-mb, the budget of the build rows; RSS may exceed it by this much. */
const DEFAULT_MEMORY_MB = 1024
const RSS_HEADROOM_MB = 150

/** The "stages (worker seconds): parse 0.26, map 1.15, ..." line of the CLI's build summary. */
export function parseStages(stdout: string): StageTimes | undefined {
  const line = /stages \(worker seconds\): (.*)/.exec(stdout)?.[1]
  if (line === undefined) return undefined
  const t = emptyStageTimes()
  for (const part of line.split(', ')) {
    const [name, value] = part.split(' ')
    if ((STAGES as readonly string[]).includes(name ?? '')) t[name as keyof StageTimes] = Number(value)
  }
  return t
}

/** Cores a system's load used: rostore's default is one worker per core; the peers load from one thread. */
function coresOf(id: string): number {
  return id === 'rostore' ? Math.max(1, Math.min(cpus().length, Math.floor(DEFAULT_MEMORY_MB / 64))) : 1
}

export function childScript(): string {
  return join(__dirname, '..', 'kit', 'child.js')
}

function peerLoad(engine: 'lmdb' | 'sqlite', ds: Dataset, sorted: boolean) {
  return (out: string): Promise<TimedResult> =>
    runTimed(process.execPath, ['--max-old-space-size=16384', childScript(), 'load', engine, ds.tsv, out, sorted ? '1' : '0'], {
      timeoutMs: 4 * 3_600_000,
    })
}

async function systemsFor(ds: Dataset): Promise<System[]> {
  const lmdb = lmdbModule()
  const sqlite = sqliteModule()
  const cdbMissing = (await ensureCdb()) ?? cdbTooLarge(ds)
  const cdbInput = cdbMissing ? undefined : ensureCdbInput(ds)
  return [
    { id: 'rostore', label: 'rostore build (all cores)', run: (out) => rostoreBuild(ds, join(out, 'store')) },
    { id: 'rostore-w1', label: 'rostore build --workers 1', run: (out) => rostoreBuild(ds, join(out, 'store'), { workers: 1 }) },
    {
      id: 'lmdb',
      label: 'LMDB, input order (async put)',
      skip: typeof lmdb === 'string' ? lmdb : undefined,
      run: peerLoad('lmdb', ds, false),
    },
    {
      id: 'lmdb-sorted',
      label: 'LMDB, sorted first (append)',
      skip: typeof lmdb === 'string' ? lmdb : undefined,
      run: peerLoad('lmdb', ds, true),
    },
    {
      id: 'sqlite',
      label: 'SQLite, input order',
      skip: typeof sqlite === 'string' ? sqlite : undefined,
      run: peerLoad('sqlite', ds, false),
    },
    {
      id: 'sqlite-sorted',
      label: 'SQLite, sorted first',
      skip: typeof sqlite === 'string' ? sqlite : undefined,
      run: peerLoad('sqlite', ds, true),
    },
    {
      id: 'cdb',
      label: 'tinycdb cdb -c (+ fsync)',
      skip: cdbMissing,
      run: async (out) => (await buildCdb(cdbInput as string, out)).timed,
    },
  ]
}

interface ShapeResult {
  readonly ds: Dataset
  readonly rows: Measured[]
}

async function benchShape(ctx: BenchContext, ds: Dataset): Promise<ShapeResult> {
  const systems = await systemsFor(ds)
  const results = new Map<string, { secs: number[]; rss: number[]; outBytes: number[]; stages: StageTimes[]; error?: string }>()
  for (const s of systems) results.set(s.id, { secs: [], rss: [], outBytes: [], stages: [] })
  const root = ensureDir(join(workRoot(), 'build-bench'))
  for (let r = 0; r < ctx.runs; r++) {
    for (const s of systems) {
      const m = results.get(s.id)!
      if (s.skip || m.error) continue
      const out = join(root, s.id)
      rmSync(out, { recursive: true, force: true })
      mkdirSync(out, { recursive: true })
      await syncDisks()
      try {
        const t = await s.run(out)
        m.secs.push(t.wallSecs)
        m.rss.push(t.maxRssBytes)
        m.outBytes.push(duBytes(out))
        const stages = parseStages(t.stdout)
        if (stages) m.stages.push(stages)
        log(
          `build ${ds.shape.name} ${s.label}: run ${r + 1} ${t.wallSecs.toFixed(2)} s, peak RSS ${(t.maxRssBytes / 2 ** 20).toFixed(0)} MiB`,
        )
      } catch (err) {
        m.error = (err as Error).message.split('\n').slice(0, 4).join(' / ').slice(0, 400)
        log(`build ${ds.shape.name} ${s.label} failed: ${m.error}`)
      } finally {
        rmSync(out, { recursive: true, force: true })
      }
    }
  }
  return { ds, rows: systems.map((s) => ({ system: s, ...results.get(s.id)! })) }
}

/** Median records/s of a system, NaN when it did not run. */
function recordsPerSec(res: ShapeResult, id: string): number {
  const m = res.rows.find((r) => r.system.id === id)
  if (!m || m.secs.length === 0) return NaN
  return res.ds.shape.records / summarize(m.secs).median
}

function bestOf(res: ShapeResult, ids: readonly string[]): { id: string; rps: number } | undefined {
  let best: { id: string; rps: number } | undefined
  for (const id of ids) {
    const rps = recordsPerSec(res, id)
    if (Number.isFinite(rps) && (!best || rps > best.rps)) best = { id, rps }
  }
  return best
}

function shapeTable(res: ShapeResult): string {
  const ours = recordsPerSec(res, 'rostore')
  const rows = res.rows.map((m) => {
    if (m.system.skip) return [m.system.label, `not run: ${m.system.skip}`, '', '', '', '', '', '', '']
    if (m.secs.length === 0) return [m.system.label, `not run: ${m.error ?? 'no result'}`, '', '', '', '', '', '', '']
    const secs = summarize(m.secs)
    const outPerRec = summarize(m.outBytes).median / res.ds.shape.records
    const rss = summarize(m.rss).median
    const rps = res.ds.shape.records / secs.median
    return [
      m.system.label,
      fmt(secs.median),
      fmtSpread(secs),
      fmt(res.ds.shape.records / secs.median),
      `${fmt(rps / coresOf(m.system.id))} (${coresOf(m.system.id)})`,
      fmt(res.ds.bytes / 1e6 / secs.median),
      fmt(outPerRec),
      Number.isFinite(rss) ? fmt(rss / 2 ** 20) : 'n/a',
      m.system.id === 'rostore' ? '1.00×' : fmtRatio(ours, rps),
    ]
  })
  return mdTable(
    [
      'system',
      'seconds (median)',
      'spread',
      'records/s',
      'records/s per core (cores)',
      'MB/s',
      'output bytes/record',
      'peak RSS MiB',
      'rostore (all cores) ÷ this',
    ],
    rows,
  )
}

/** Median seconds per stage of the rostore rows (worker-thread time summed over workers). */
function stageTable(res: ShapeResult): string {
  const rows = res.rows
    .filter((m) => m.stages.length > 0)
    .map((m) => {
      const median = (k: keyof StageTimes): number => summarize(m.stages.map((t) => t[k])).median
      const total = STAGES.reduce((sum, k) => sum + median(k), 0)
      return [
        m.system.label,
        fmt(summarize(m.secs).median),
        ...STAGES.map((k) => `${fmt(median(k))} (${Math.round((100 * median(k)) / total)}%)`),
      ]
    })
  if (rows.length === 0) return 'No stage times (the build summary had none).'
  return mdTable(['rostore build', 'wall s', ...STAGES.map((k) => `${k} s`)], rows)
}

export async function runBuildBench(ctx: BenchContext): Promise<Section> {
  const timeMissing = await ensureGnuTime()
  const parts: string[] = []
  const goals: GoalRow[] = []
  parts.push(
    `Each system runs ${ctx.runs}× as its own process (interleaved rounds, \`sync\` before each run); the table shows the median wall time, ` +
      `spread = ±half the range over the median, rates from the median. MB/s = TSV input bytes (10^6) per second. ` +
      `Output bytes/record = all files the system wrote ÷ records. rostore builds with its default chunk count and memory budget ` +
      `(1024 MiB), fsyncing its output; LMDB commits durably, SQLite and cdb are fsynced once at the end. ` +
      `The peers' rows "sorted first" include reading all records into memory and sorting them. ` +
      `Work per record: rostore parses the line, MD5s the key (routing, chunk and index key), copies the record into a sort ` +
      `buffer, radix-sorts by hash, merges, CRC-32s key and value, writes an index entry and a data record, fsyncs, and checksums ` +
      `(XXH64) every file it wrote; LMDB and SQLite insert into a B-tree (page splits, LMDB copy-on-write pages), ` +
      `SQLite with no journal; tinycdb hashes the key with its 32-bit hash and appends the record — no sort, no MD5, no checksum.` +
      (timeMissing ? ` Peak RSS not measured: ${timeMissing}.` : ''),
  )
  for (const shape of ctx.shapes) {
    const ds = ensureDataset(shape, ctx.seed)
    log(`build bench: ${shape.name} (${(ds.bytes / 1e6).toFixed(0)} MB of TSV)`)
    const res = await benchShape(ctx, ds)
    parts.push(
      `### ${shape.name} (${fmt(ds.bytes / 1e6)} MB TSV)\n\n${shapeTable(res)}\n\n` +
        `Where rostore's time goes (medians over the runs; seconds of worker-thread time summed over the workers, from the ` +
        `build summary, so the all-cores row adds up to about cores × its map and reduce phases; builder/stage-times.ts):\n\n${stageTable(res)}`,
    )
    const ours = recordsPerSec(res, 'rostore')
    const lmdb = bestOf(res, ['lmdb', 'lmdb-sorted'])
    const sqlite = bestOf(res, ['sqlite', 'sqlite-sorted'])
    const cdb = bestOf(res, ['cdb'])
    const ratio = (peer: { rps: number } | undefined): number => (peer ? ours / peer.rps : NaN)
    const show = (peer: { id: string; rps: number } | undefined): string =>
      peer ? `${fmt(ratio(peer))}× (${fmt(ours)} vs ${fmt(peer.rps)} records/s, ${peer.id})` : 'peer not run'
    const ok = (peer: { rps: number } | undefined, min: number): boolean | undefined =>
      peer && Number.isFinite(ours) ? ratio(peer) >= min : undefined
    goals.push(
      goal('build-lmdb', `Build (all cores) vs LMDB bulk load, ${shape.name}`, '≥ 3× (faster LMDB variant)', show(lmdb), ok(lmdb, 3)),
    )
    goals.push(
      goal(
        'build-sqlite',
        `Build (all cores) vs SQLite bulk load, ${shape.name}`,
        '≥ 3× (faster SQLite variant)',
        show(sqlite),
        ok(sqlite, 3),
      ),
    )
    goals.push(goal('build-cdb', `Build (all cores) vs tinycdb, ${shape.name}`, '≥ 0.5×', show(cdb), ok(cdb, 0.5)))
    const btree = [lmdb, sqlite].filter((p) => p !== undefined).sort((a, b) => b.rps - a.rps)[0]
    goals.push(
      goal(
        'build-btree',
        `Build (all cores) vs the faster B-tree bulk load (LMDB, SQLite), ${shape.name}`,
        '≥ 1.5×',
        show(btree),
        ok(btree, 1.5),
      ),
    )
    if (shape.valueBytes === 100) {
      const w1 = recordsPerSec(res, 'rostore-w1')
      goals.push(
        goal(
          'build-per-core',
          `Build records/s per core (--workers 1), ${shape.name}`,
          `≥ 2× ${fmt(PER_CORE_BEFORE)} (the per-core rate before the batched builder)`,
          Number.isFinite(w1) ? `${fmt(w1 / PER_CORE_BEFORE)}× (${fmt(w1)} records/s)` : 'not run',
          Number.isFinite(w1) ? w1 >= 2 * PER_CORE_BEFORE : undefined,
        ),
      )
    }
    const rss = Math.max(...res.rows.filter((m) => m.system.id.startsWith('rostore')).flatMap((m) => m.rss))
    const limit = DEFAULT_MEMORY_MB + RSS_HEADROOM_MB
    goals.push(
      goal(
        'build-rss-default',
        `Builder peak RSS, --memory-mb ${DEFAULT_MEMORY_MB} (default), ${shape.name}`,
        `≤ ${limit} MiB (budget + ${RSS_HEADROOM_MB})`,
        Number.isFinite(rss) ? `${fmt(rss / 2 ** 20)} MiB` : 'not measured',
        Number.isFinite(rss) ? rss / 2 ** 20 <= limit : undefined,
      ),
    )
  }
  const first = ctx.shapes[0]
  if (first !== undefined) {
    try {
      const inputs = await runInputBench(ctx, first)
      parts.push(inputs.markdown)
      goals.push(...inputs.goals)
    } catch (err) {
      parts.push(`### Input formats\n\nNot run: ${(err as Error).message.split('\n')[0] ?? ''}`)
    }
  }
  return { title: '1. Build', markdown: parts.join('\n\n') + '\n', goals }
}
