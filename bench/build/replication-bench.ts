/**
 * Measurement 1c — what replication costs the build. Format 1 writes every record once per
 * replica; format 2 (`--layout partitions`) writes each partition once and leaves replicas
 * to the fetchers, so its output and build time should not grow with R. Per shape, on a
 * 3-node cluster of 12 partitions, in the same run: format 2 at R=1 and R=2, and format 1
 * at R=2 for reference. Each build runs as its own process (`rostore build`, default chunks
 * and memory), interleaved rounds, `sync` before each run.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ensureDataset, ensureDir, workRoot, type Dataset } from '../kit/data'
import { goal, type BenchContext, type GoalRow, type Section } from '../kit/report'
import { rostoreBuild, type RostoreBuildOptions } from '../kit/rostore'
import { fmt, fmtSpread, mdTable, summarize } from '../kit/stats'
import { duBytes, log, syncDisks } from '../kit/system'

export const REPLICATION_TITLE = '1c. Build: output and time vs replication (format 2)'

/** Format 2 at R=2 against R=1: at most this much more output, and this much more time. */
const MAX_BYTES_RATIO = 1.05
const MAX_TIME_RATIO = 1.1

interface Variant {
  readonly id: string
  readonly label: string
  readonly options: RostoreBuildOptions
}

const VARIANTS: readonly Variant[] = [
  { id: 'p-r1', label: 'format 2 (--layout partitions), R=1', options: { layout: 'partitions', replication: 1 } },
  { id: 'p-r2', label: 'format 2 (--layout partitions), R=2', options: { layout: 'partitions', replication: 2 } },
  { id: 'n-r2', label: 'format 1 (--layout nodes), R=2', options: { layout: 'nodes', replication: 2 } },
]

/** Three nodes holding 12 partitions round robin (the build never connects to them). */
function threeNodeCluster(dir: string): string {
  ensureDir(dir)
  const path = join(dir, 'cluster-3x12.json')
  const nodes = [0, 1, 2].map((id) => ({
    id,
    host: '127.0.0.1',
    port: 7000 + id,
    partitions: Array.from({ length: 12 }, (_, p) => p).filter((p) => p % 3 === id),
  }))
  writeFileSync(path, `${JSON.stringify({ name: 'bench', nodes }, null, 2)}\n`)
  return path
}

interface Measured {
  readonly secs: number[]
  readonly bytes: number[]
  error?: string
}

async function benchShape(ctx: BenchContext, ds: Dataset, cluster: string): Promise<Map<string, Measured>> {
  const results = new Map<string, Measured>(VARIANTS.map((v) => [v.id, { secs: [], bytes: [] }]))
  const root = ensureDir(join(workRoot(), 'replication-bench'))
  for (let r = 0; r < ctx.runs; r++) {
    for (const v of VARIANTS) {
      const m = results.get(v.id)!
      if (m.error !== undefined) continue
      const out = join(root, v.id)
      rmSync(out, { recursive: true, force: true })
      mkdirSync(out, { recursive: true })
      await syncDisks()
      try {
        const t = await rostoreBuild(ds, join(out, 'store'), { ...v.options, cluster })
        m.secs.push(t.wallSecs)
        m.bytes.push(duBytes(out))
        log(`replication ${ds.shape.name} ${v.label}: run ${r + 1} ${t.wallSecs.toFixed(2)} s`)
      } catch (err) {
        m.error = (err as Error).message.split('\n').slice(0, 4).join(' / ').slice(0, 400)
        log(`replication ${ds.shape.name} ${v.label} failed: ${m.error}`)
      } finally {
        rmSync(out, { recursive: true, force: true })
      }
    }
  }
  return results
}

const median = (xs: readonly number[]): number => (xs.length === 0 ? NaN : summarize(xs).median)

export async function runReplicationBench(ctx: BenchContext): Promise<Section> {
  const cluster = threeNodeCluster(join(workRoot(), 'tmp'))
  const parts: string[] = [
    `3 nodes, 12 partitions, default chunk count and memory budget. Each build runs ${ctx.runs}× as its own process ` +
      `(interleaved rounds, \`sync\` before each run); medians, spread = ±half the range over the median. ` +
      `Output = every file the build wrote (du). Format 1 writes each record once per replica; format 2 once.`,
  ]
  const goals: GoalRow[] = []
  for (const shape of ctx.shapes) {
    const ds = ensureDataset(shape, ctx.seed)
    log(`replication bench: ${shape.name}`)
    const res = await benchShape(ctx, ds, cluster)
    const base = res.get('p-r1')!
    const rows = VARIANTS.map((v) => {
      const m = res.get(v.id)!
      if (m.secs.length === 0) return [v.label, `not run: ${m.error ?? 'no result'}`, '', '', '', '']
      return [
        v.label,
        fmt(median(m.secs)),
        fmtSpread(summarize(m.secs)),
        fmt(median(m.bytes) / 1e6),
        `${fmt(median(m.bytes) / median(base.bytes))}×`,
        `${fmt(median(m.secs) / median(base.secs))}×`,
      ]
    })
    parts.push(
      `### ${shape.name} (${fmt(ds.bytes / 1e6)} MB TSV)\n\n` +
        mdTable(['build', 'seconds (median)', 'spread', 'output MB', 'output ÷ format 2 R=1', 'seconds ÷ format 2 R=1'], rows),
    )
    const r2 = res.get('p-r2')!
    const bytesRatio = median(r2.bytes) / median(base.bytes)
    const timeRatio = median(r2.secs) / median(base.secs)
    goals.push(
      goal(
        'build-r2-bytes',
        `Build output at R=2 vs R=1 on 3 nodes (format 2), ${shape.name}`,
        `≤ ${MAX_BYTES_RATIO}×`,
        Number.isFinite(bytesRatio) ? `${fmt(bytesRatio)}×` : 'not run',
        Number.isFinite(bytesRatio) ? bytesRatio <= MAX_BYTES_RATIO : undefined,
      ),
    )
    goals.push(
      goal(
        'build-r2-time',
        `Build time at R=2 vs R=1 on 3 nodes (format 2), ${shape.name}`,
        `≤ ${MAX_TIME_RATIO}×`,
        Number.isFinite(timeRatio) ? `${fmt(timeRatio)}× (${fmt(median(r2.secs))} s vs ${fmt(median(base.secs))} s)` : 'not run',
        Number.isFinite(timeRatio) ? timeRatio <= MAX_TIME_RATIO : undefined,
      ),
    )
  }
  return { title: REPLICATION_TITLE, markdown: parts.join('\n\n') + '\n', goals }
}
