/**
 * The parent side of read-probe.ts: forks the probe, names its phases, and collects the
 * per-phase figures when stopped. One probe per measurement, so its timings never share
 * an event loop with the bench's own work.
 */
import { fork } from 'node:child_process'
import { join } from 'node:path'
import type { PhaseStats, ProbeAnswer, ProbeJob, ProbeMessage } from './read-probe'
import { fmt } from '../kit/stats'

export interface ReadProbe {
  /** Starts a new phase: the reads from now on count under `name`. */
  phase(name: string): void
  /** Ends the probe; the figures of every phase. */
  stop(): Promise<Record<string, PhaseStats>>
}

export function startReadProbe(job: ProbeJob): ReadProbe {
  const probe = fork(join(__dirname, 'read-probe.js'), [JSON.stringify(job)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const result = new Promise<ProbeAnswer>((resolve, reject) => {
    probe.once('message', (m: ProbeAnswer) => resolve(m))
    probe.once('exit', (code) => reject(new Error(`read probe exited with ${code}`)))
  })
  // A probe that dies early rejects `result`; the rejection is reported by stop().
  result.catch(() => undefined)
  const send = (m: ProbeMessage): void => void probe.send(m)
  return {
    phase: (name) => send({ type: 'phase', name }),
    stop: async () => {
      send({ type: 'stop' })
      return (await result).phases
    },
  }
}

/** The p99 rule of the "reads during ..." goals: within noise of the baseline. */
export function p99WithinNoise(base: PhaseStats, during: PhaseStats): { bound: number; met: boolean } {
  const bound = base.p99Ms * 1.5 + 0.1
  return { bound, met: during.p99Ms <= bound }
}

/** A phase's figures for a table row, in the order the read-probe tables use. */
export type PhaseColumn = 's' | 'reads' | 'errors' | 'p50' | 'p99' | 'p999' | 'max' | 'gap'

const PHASE_CELLS: Record<PhaseColumn, (p: PhaseStats) => string> = {
  s: (p) => fmt(p.seconds, 3),
  reads: (p) => String(p.reads),
  errors: (p) => String(p.errors),
  p50: (p) => fmt(p.p50Ms),
  p99: (p) => fmt(p.p99Ms),
  p999: (p) => fmt(p.p999Ms),
  max: (p) => fmt(p.maxMs),
  gap: (p) => fmt(p.maxGapMs),
}

export function phaseRow(name: string, p: PhaseStats, columns: readonly PhaseColumn[]): string[] {
  return [name, ...columns.map((c) => PHASE_CELLS[c](p))]
}
