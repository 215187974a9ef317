/**
 * "Latency at a given rate": runs the paced GET load with the C load generator
 * (tools/paced-load.c, compiled here on first use with the machine's C compiler, which
 * node-gyp needs anyway), falling back to the Node one (paced-client.ts) when it cannot be
 * built. The result says which ran: the Node client's own pauses dominate its p99 at the
 * rates these rows use (Redis measured through it showed a 20 ms p99), so figures from the
 * two are not comparable.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../../common/paths'
import { ensureDir, workRoot, ZIPF_S } from '../kit/data'
import type { LoadResult } from './load-client'
import type { LatencyHistogram } from './latency-histogram'
import type { PacedJob } from './paced-client'
import { runTimed } from '../kit/system'

export type PacedTool = 'c' | 'node'

export interface PacedResult extends LoadResult {
  /** The answered requests' latencies, bucketed (the C generator only). */
  readonly hist?: LatencyHistogram
  /** CPU of the load generator over its run (cores). */
  readonly clientCpu: number
  readonly tool: PacedTool
}

let built: { path?: string; reason?: string } | undefined

const SOURCE = join(packageRoot(__dirname), 'bench', 'tools', 'paced-load.c')

/** Compiles tools/paced-load.c into `path` with the machine's C compiler ($CC or cc); throws when it cannot. */
export function compilePacedLoad(path: string): void {
  execFileSync(process.env.CC ?? 'cc', ['-O2', '-o', path, SOURCE, '-lm'], { stdio: ['ignore', 'ignore', 'pipe'] })
}

/** The compiled load generator, rebuilt when its source is newer; undefined (with the reason) when no compiler works. */
export function pacedLoadBinary(): { path?: string; reason?: string } {
  if (built) return built
  const path = join(ensureDir(join(workRoot(), 'bin')), 'paced-load')
  try {
    if (!existsSync(path) || statSync(path).mtimeMs < statSync(SOURCE).mtimeMs) compilePacedLoad(path)
    built = { path }
  } catch (err) {
    built = { reason: `cannot compile ${SOURCE}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}` }
  }
  return built
}

/** One paced run on core `cpu`, bounded by the job's duration plus two minutes. */
export async function runPacedLoad(job: PacedJob, cpu: number): Promise<PacedResult> {
  const bin = pacedLoadBinary().path
  const timeoutMs = (job.durationSec + 120) * 1000
  const t = bin
    ? await runTimed(
        bin,
        [
          String(job.port),
          job.protocol ?? 'http',
          job.store,
          String(job.records),
          String(job.seed),
          String(job.rate),
          String(job.connections),
          String(job.durationSec),
          job.kind === 'zipf' ? String(ZIPF_S) : '0',
        ],
        { cpu, timeoutMs },
      )
    : await runTimed(process.execPath, [join(__dirname, 'paced-client.js'), JSON.stringify(job)], { cpu, timeoutMs })
  const r = JSON.parse(t.stdout.trim().split('\n').pop() ?? '{}') as LoadResult
  return { ...r, clientCpu: (t.userSecs + t.sysSecs) / r.secs, tool: bin ? 'c' : 'node' }
}

/** The sentence a section prints under its paced rows: which load generator measured them. */
export function pacedToolNote(tool: PacedTool | undefined): string {
  if (tool === undefined) return ''
  return tool === 'c'
    ? 'The paced rows were measured with the C load generator (bench/tools/paced-load.c: open loop, latency from each request’s due time).'
    : `The paced rows were measured with the Node load generator (bench/load/paced-client.ts; ${pacedLoadBinary().reason ?? 'the C one did not run'}): its own pauses set much of their p99.`
}
