/**
 * Measurement 5 — builder memory: peak RSS of `rostore build --memory-mb M` (default
 * workers = all cores, worker threads share the process, so the process's peak RSS
 * covers them) on an input 10× larger than M, read by GNU time (%M = the process's
 * maximum resident set). The node's RSS against its .data size is reported by the serving
 * benchmark (section 3), which measures it on the running node.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { ensureDataset, ensureDir, KEY_DIGITS, workRoot, type Shape } from '../kit/data'
import { goal, type BenchContext, type GoalRow, type Section } from '../kit/report'
import { rostoreBuild } from '../kit/rostore'
import { fmt, fmtSpread, mdTable, summarize } from '../kit/stats'
import { duBytes, ensureGnuTime, log, syncDisks } from '../kit/system'

const HEADROOM_MB = 150
const VALUE_BYTES = 1024

export async function runMemoryBench(ctx: BenchContext): Promise<Section> {
  const missing = await ensureGnuTime()
  if (missing) {
    return {
      title: '5. Memory',
      markdown: `Not run: peak RSS needs GNU time: ${missing}\n`,
      goals: [goal('builder-rss', 'Builder peak RSS', `≤ --memory-mb + ${HEADROOM_MB} MB`, 'not run', undefined)],
    }
  }
  const budgets = ctx.quick ? [32] : [64, 256]
  const rows: string[][] = []
  const goals: GoalRow[] = []
  for (const mb of budgets) {
    const lineBytes = KEY_DIGITS + 1 + VALUE_BYTES + 1
    const records = Math.ceil((10 * mb * 2 ** 20) / lineBytes)
    const shape: Shape = { name: `${fmt(records)} × ${VALUE_BYTES} B`, records, valueBytes: VALUE_BYTES }
    const ds = ensureDataset(shape, ctx.seed)
    const rss: number[] = []
    const secs: number[] = []
    let error: string | undefined
    const runs = ctx.quick ? 1 : Math.min(2, ctx.runs)
    for (let r = 0; r < runs && !error; r++) {
      const out = join(ensureDir(join(workRoot(), 'memory-bench')), `out-${mb}`)
      rmSync(out, { recursive: true, force: true })
      await syncDisks()
      try {
        const t = await rostoreBuild(ds, out, { memoryMb: mb })
        rss.push(t.maxRssBytes)
        secs.push(t.wallSecs)
        log(
          `memory: --memory-mb ${mb} on ${(ds.bytes / 2 ** 20).toFixed(0)} MiB: peak RSS ${(t.maxRssBytes / 2 ** 20).toFixed(0)} MiB, ${t.wallSecs.toFixed(1)} s, output ${(duBytes(out) / 2 ** 20).toFixed(0)} MiB`,
        )
      } catch (err) {
        error = (err as Error).message.split('\n').slice(0, 4).join(' / ').slice(0, 400)
        log(`memory: --memory-mb ${mb} failed: ${error}`)
      } finally {
        rmSync(out, { recursive: true, force: true })
      }
    }
    const peak = summarize(rss)
    const limit = mb + HEADROOM_MB
    const peakMb = peak.max / 2 ** 20
    rows.push(
      error && rss.length === 0
        ? [`${mb}`, fmt(ds.bytes / 2 ** 20), `not run: ${error}`, '', '', '', '']
        : [
            `${mb}`,
            fmt(ds.bytes / 2 ** 20),
            fmt(peakMb),
            fmtSpread(peak),
            `${limit}`,
            peakMb <= limit ? 'yes' : 'no',
            fmt(ds.shape.records / summarize(secs).median),
          ],
    )
    goals.push(
      goal(
        'builder-rss',
        `Builder peak RSS, --memory-mb ${mb}, ${fmt(ds.bytes / 2 ** 20)} MiB input`,
        `≤ ${limit} MiB (budget + ${HEADROOM_MB})`,
        rss.length ? `${fmt(peakMb)} MiB (${fmt(peakMb - mb)} MiB over the budget)` : 'not run',
        rss.length ? peakMb <= limit : undefined,
      ),
    )
  }
  const md =
    `\`rostore build --memory-mb M\` (all cores) on a ${VALUE_BYTES}-byte-value input of 10 × M MiB; peak RSS = GNU time's maximum resident set of the ` +
    `build process (worker threads included), the largest of the runs.\n\n` +
    mdTable(['--memory-mb', 'input MiB', 'peak RSS MiB', 'spread', 'limit MiB', 'within', 'records/s'], rows)
  return { title: '5. Memory', markdown: `${md}\n`, goals }
}
