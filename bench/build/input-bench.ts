/**
 * Measurement 1b — input formats: the same records as TSV, Parquet (Snappy and
 * ZSTD, written by DuckDB), CSV, JSON lines (DuckDB) and an Arrow IPC file (pyarrow):
 * - build rate of `rostore build` (all cores) from each, interleaved runs, against TSV;
 * - parse rate of each reader alone (this process, one thread, no build): rows/s, MB/s;
 * - peak RSS of a build from a Parquet file 10× `--memory-mb`.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { cpus } from 'node:os'
import { readInput } from '../../formats/input/read-input'
import { readRecordBatches } from '../../formats/input/record-batch'
import type { InputFormat } from '../../formats/input/types'
import { DERIVED_INPUTS, ensureDataset, ensureDerivedInput, ensureDir, KEY_DIGITS, workRoot, type Dataset, type Shape } from '../kit/data'
import { goal, type BenchContext, type GoalRow } from '../kit/report'
import { rostoreBuild } from '../kit/rostore'
import { fmt, fmtSpread, mdTable, summarize } from '../kit/stats'
import { log, syncDisks } from '../kit/system'

interface Input {
  readonly id: string
  readonly path: string
  readonly format: InputFormat
  readonly bytes: number
}

const HEADROOM_MB = 150

async function inputsOf(ds: Dataset): Promise<Input[]> {
  const inputs: Input[] = [{ id: 'tsv', path: ds.tsv, format: 'tsv', bytes: ds.bytes }]
  for (const kind of DERIVED_INPUTS) {
    try {
      inputs.push({ id: kind, ...(await ensureDerivedInput(ds, kind)) })
    } catch (err) {
      log(`input bench: cannot make the ${kind} input: ${(err as Error).message.split('\n')[0]}`)
    }
  }
  return inputs
}

async function buildRates(
  ctx: BenchContext,
  ds: Dataset,
  inputs: readonly Input[],
): Promise<Map<string, { secs: number[]; rss: number[] }>> {
  const results = new Map(inputs.map((i) => [i.id, { secs: [] as number[], rss: [] as number[] }]))
  const root = ensureDir(join(workRoot(), 'input-bench'))
  for (let r = 0; r < ctx.runs; r++) {
    for (const input of inputs) {
      const out = join(root, input.id)
      rmSync(out, { recursive: true, force: true })
      await syncDisks()
      try {
        const t = await rostoreBuild(ds, out, { input })
        results.get(input.id)!.secs.push(t.wallSecs)
        results.get(input.id)!.rss.push(t.maxRssBytes)
        log(`input bench: build from ${input.id}: run ${r + 1} ${t.wallSecs.toFixed(2)} s`)
      } catch (err) {
        log(`input bench: build from ${input.id} failed: ${(err as Error).message.split('\n')[0]}`)
      } finally {
        rmSync(out, { recursive: true, force: true })
      }
    }
  }
  return results
}

/** Seconds to read every record of `input` with its reader, in this process. */
async function parseSeconds(input: Input): Promise<number> {
  const started = process.hrtime.bigint()
  let rows = 0
  for await (const rec of readInput(input.path, input.format, {})) rows += rec.key.length > 0 ? 1 : 0
  if (rows === 0) throw new Error(`${input.path}: no records`)
  return Number(process.hrtime.bigint() - started) / 1e9
}

/** Seconds to read every record of `input` through the batch reader the build uses (readRecordBatches). */
async function parseBatchSeconds(input: Input): Promise<number> {
  const started = process.hrtime.bigint()
  let rows = 0
  for await (const b of readRecordBatches(input.path, input.format, {})) rows += b.count
  if (rows === 0) throw new Error(`${input.path}: no records`)
  return Number(process.hrtime.bigint() - started) / 1e9
}

/**
 * Peak RSS of a build from Parquet 10× the budget, written by pyarrow as Spark lays it
 * out (1 MiB pages; the goal) and by DuckDB (pages of up to ~100 MB: the reader holds one
 * page of each column, stored and decompressed, so memory follows the page size).
 */
export async function memoryRows(ctx: BenchContext): Promise<{ rows: string[][]; goal: GoalRow }> {
  const mb = ctx.quick ? 32 : 64
  const valueBytes = 1024
  const records = Math.ceil((10 * mb * 2 ** 20) / (KEY_DIGITS + valueBytes + 2))
  const shape: Shape = { name: `${fmt(records)} × ${valueBytes} B`, records, valueBytes }
  const ds = ensureDataset(shape, ctx.seed)
  const limit = mb + HEADROOM_MB
  const rows: string[][] = []
  let result: GoalRow = goal('build-parquet-rss', 'Builder peak RSS from Parquet', `≤ ${limit} MiB`, 'not run', undefined)
  for (const kind of ['parquet-snappy', 'parquet-pyarrow'] as const) {
    const writer = kind === 'parquet-pyarrow' ? 'pyarrow, 1 MiB pages' : 'DuckDB, ~100 MB pages'
    const out = join(ensureDir(join(workRoot(), 'input-bench')), 'memory')
    rmSync(out, { recursive: true, force: true })
    try {
      const input = await ensureDerivedInput(ds, kind)
      await syncDisks()
      const t = await rostoreBuild(ds, out, { input, memoryMb: mb })
      const peak = t.maxRssBytes / 2 ** 20
      log(`input bench: ${writer} Parquet ${fmt(input.bytes / 2 ** 20)} MiB, --memory-mb ${mb}: peak RSS ${fmt(peak)} MiB`)
      rows.push([
        writer,
        `${mb}`,
        fmt(input.bytes / 2 ** 20),
        fmt(peak),
        `${limit}`,
        peak <= limit ? 'yes' : 'no',
        fmt(records / t.wallSecs),
      ])
      if (kind === 'parquet-pyarrow') {
        result = goal(
          'build-parquet-rss',
          `Builder peak RSS from Parquet 10× the budget (--memory-mb ${mb}, 1 MiB pages)`,
          `≤ ${limit} MiB`,
          `${fmt(peak)} MiB`,
          peak <= limit,
        )
      }
    } catch (err) {
      rows.push([writer, `${mb}`, '', `failed: ${(err as Error).message.split('\n')[0] ?? ''}`, `${limit}`, '', ''])
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
  }
  return { rows, goal: result }
}

export async function runInputBench(ctx: BenchContext, shape: Shape): Promise<{ markdown: string; goals: GoalRow[] }> {
  const ds = ensureDataset(shape, ctx.seed)
  const inputs = await inputsOf(ds)
  const builds = await buildRates(ctx, ds, inputs)
  const rate = (id: string): number => {
    const secs = builds.get(id)?.secs ?? []
    return secs.length > 0 ? shape.records / summarize(secs).median : NaN
  }
  const tsv = rate('tsv')
  const buildTable = mdTable(
    ['input', 'file MB', 'seconds (median)', 'spread', 'records/s', '÷ TSV', 'peak RSS MiB'],
    inputs.map((i) => {
      const m = builds.get(i.id)!
      if (m.secs.length === 0) return [i.id, fmt(i.bytes / 1e6), 'failed', '', '', '', '']
      const s = summarize(m.secs)
      return [
        i.id,
        fmt(i.bytes / 1e6),
        fmt(s.median),
        fmtSpread(s),
        fmt(rate(i.id)),
        fmt(rate(i.id) / tsv),
        fmt(summarize(m.rss).median / 2 ** 20),
      ]
    }),
  )
  const parseRows: string[][] = []
  // The build's workers each parse their own splits: parsing is the bottleneck when one
  // thread parses slower than a worker builds (the all-cores build rate per worker).
  const workers = Math.max(1, Math.min(cpus().length, 16))
  let worstShare: { id: string; share: number } | undefined
  for (const input of inputs) {
    const secs: number[] = []
    const batchSecs: number[] = []
    for (let r = 0; r < ctx.runs; r++) {
      secs.push(await parseSeconds(input))
      batchSecs.push(await parseBatchSeconds(input))
    }
    const s = summarize(secs).median
    const b = summarize(batchSecs).median
    log(`input bench: parse ${input.id}: ${s.toFixed(2)} s (records), ${b.toFixed(2)} s (batches)`)
    const perWorker = rate(input.id) / workers
    const share = perWorker / (shape.records / b)
    if (Number.isFinite(share) && (!worstShare || share > worstShare.share)) worstShare = { id: input.id, share }
    parseRows.push([
      input.id,
      fmt(shape.records / s),
      fmt(shape.records / b),
      fmt(input.bytes / 1e6 / b),
      fmt(ds.payloadBytes / 1e6 / b),
      Number.isFinite(share) ? `${Math.round(100 * share)}%` : '',
    ])
  }
  const memory = await memoryRows(ctx)
  const goals = (['parquet-snappy', 'parquet-zstd'] as const).map((id) => {
    const ratio = rate(id) / tsv
    return goal(
      `build-${id}`,
      `Build from ${id === 'parquet-snappy' ? 'Snappy' : 'ZSTD'} Parquet vs TSV, ${shape.name}`,
      '≥ 0.8× the TSV rate',
      Number.isFinite(ratio) ? `${fmt(ratio)}× (${fmt(rate(id))} vs ${fmt(tsv)} records/s)` : 'not run',
      Number.isFinite(ratio) ? ratio >= 0.8 : undefined,
    )
  })
  goals.push(memory.goal)
  goals.push(
    goal(
      'parse-share',
      `Parsing is not the build's bottleneck at ${workers} workers, ${shape.name}`,
      'every format: one thread parses faster than a worker builds (share < 100%)',
      worstShare ? `slowest: ${worstShare.id}, parsing ${Math.round(100 * worstShare.share)}% of a worker's time` : 'not run',
      worstShare ? worstShare.share < 1 : undefined,
    ),
  )
  const markdown =
    `### Input formats, ${shape.name}\n\n` +
    `The same records in file order as TSV, Parquet (DuckDB, default row groups of 122,880 rows), CSV and JSON lines (DuckDB) and an ` +
    `Arrow IPC file (pyarrow, batches of 65,536 rows). \`rostore build\` (all cores, default memory budget), ${ctx.runs} interleaved runs:\n\n` +
    `${buildTable}\n\nParse rate of each reader alone (one thread in the benchmark process, every record pulled, no build): ` +
    `through the record reader (readInput, one object per record) and through the batch reader the build uses ` +
    `(readRecordBatches: byte ranges in typed arrays); file MB/s = the file's bytes, payload MB/s = key and value bytes, both ` +
    `for the batch reader; share of a worker = the all-cores build rate per worker ÷ the batch parse rate, the part of a ` +
    `worker's time its parsing takes (${workers} workers):\n\n` +
    `${mdTable(['input', 'rows/s (records)', 'rows/s (batches)', 'file MB/s', 'payload MB/s', 'share of a worker'], parseRows)}\n\n` +
    `Peak RSS (GNU time) of \`rostore build --memory-mb M\` from a Snappy Parquet file of 10 × M MiB (1024-byte values); the reader ` +
    `holds one page per column (stored and decompressed), so the writer's page size counts:\n\n` +
    `${mdTable(['Parquet written by', '--memory-mb', 'input MiB', 'peak RSS MiB', 'limit MiB', 'within', 'records/s'], memory.rows)}`
  return { markdown, goals }
}
