/**
 * A closed-loop GET probe for "reads during a push" (push-bench.ts), run as its own
 * process with fork() so the bench process's own work never delays it:
 *   fork('read-probe.js', ['<json ProbeJob>'])
 *
 * One keep-alive connection, one request at a time over keys of the data set (90%
 * present, 10% absent). The parent names phases ({type: 'phase', name}); per phase the
 * probe keeps every latency and the largest gap between two answers, the number a user
 * sees as "the node stopped answering". {type: 'stop'} ends it; it answers {type:
 * 'result', phases}. Bounded: it stops by itself after `maxSec`. Only targets 127.0.0.1.
 */
import { Agent, get } from 'node:http'
import { keyOf, streamIds } from '../kit/data'
import { percentileSorted } from '../kit/stats'

export interface ProbeJob {
  readonly port: number
  readonly store: string
  readonly records: number
  readonly seed: number
  readonly maxSec: number
}

export interface PhaseStats {
  readonly reads: number
  readonly errors: number
  readonly seconds: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly p999Ms: number
  readonly maxMs: number
  /** Largest time between two consecutive answers. */
  readonly maxGapMs: number
}

export type ProbeMessage = { type: 'phase'; name: string } | { type: 'stop' }
export type ProbeAnswer = { type: 'result'; phases: Record<string, PhaseStats> }

interface Phase {
  readonly latencies: number[]
  errors: number
  maxGap: number
  readonly started: number
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '{}') as ProbeJob
  const ids = streamIds('uniform', job.records, 100_000, job.seed + 31)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const phases = new Map<string, Phase>()
  let current: Phase | undefined
  let stop = false
  process.on('message', (m: ProbeMessage) => {
    if (m.type === 'stop') stop = true
    else {
      current = { latencies: [], errors: 0, maxGap: 0, started: performance.now() }
      phases.set(m.name, current)
    }
  })
  // A bench that dies (or is killed) must not leave its probe spinning on a dead port.
  process.on('disconnect', () => process.exit(2))
  const deadline = Date.now() + job.maxSec * 1000
  let last = performance.now()
  for (let j = 0; !stop && Date.now() < deadline; j++) {
    const path = `/stores/${job.store}/keys/${keyOf(ids[j % ids.length] as number)}`
    const t0 = performance.now()
    const ok = await new Promise<boolean>((resolve) => {
      const req = get({ host: '127.0.0.1', port: job.port, path, agent }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode === 200 || res.statusCode === 404))
        res.on('error', () => resolve(false))
      })
      req.on('error', () => resolve(false))
    })
    const t1 = performance.now()
    const p = current
    if (p) {
      p.latencies.push(t1 - t0)
      if (!ok) p.errors++
      // The first answer of a phase is measured from the phase's start.
      p.maxGap = Math.max(p.maxGap, t1 - Math.max(last, p.started))
    }
    last = t1
  }
  const out: Record<string, PhaseStats> = {}
  const end = performance.now()
  const names = [...phases.keys()]
  names.forEach((name, i) => {
    const p = phases.get(name)!
    const next = phases.get(names[i + 1] ?? '')
    const sorted = Float64Array.from(p.latencies).sort()
    out[name] = {
      reads: sorted.length,
      errors: p.errors,
      seconds: ((next?.started ?? end) - p.started) / 1000,
      p50Ms: percentileSorted(sorted, 50),
      p99Ms: percentileSorted(sorted, 99),
      p999Ms: percentileSorted(sorted, 99.9),
      maxMs: sorted[sorted.length - 1] ?? NaN,
      maxGapMs: p.maxGap,
    }
  })
  agent.destroy()
  process.send?.({ type: 'result', phases: out } satisfies ProbeAnswer, () => process.exit(0))
}

main().catch((err: unknown) => {
  process.stderr.write(`read-probe: ${err instanceof Error ? err.stack : String(err)}\n`)
  process.exit(1)
})
