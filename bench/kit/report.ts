/**
 * Shared shapes of the suite: the run's settings every benchmark gets, and what each one
 * hands back for bench/RESULTS.md (markdown, goal rows, notes).
 */
import type { Shape } from './data'

export interface BenchContext {
  readonly quick: boolean
  /** Records per data shape. */
  readonly records: number
  readonly shapes: readonly Shape[]
  readonly seed: number
  /** Repetitions of each measurement. */
  readonly runs: number
}

export type GoalStatus = 'met' | 'missed' | 'not run'

export interface GoalRow {
  /** Stable id, used to attach the explanation of a miss (bench/kit/analysis.ts). */
  readonly id: string
  readonly goal: string
  readonly target: string
  readonly measured: string
  readonly status: GoalStatus
}

export interface Section {
  readonly title: string
  readonly markdown: string
  readonly goals: readonly GoalRow[]
}

export function goal(id: string, goalText: string, target: string, measured: string, met: boolean | undefined): GoalRow {
  return { id, goal: goalText, target, measured, status: met === undefined ? 'not run' : met ? 'met' : 'missed' }
}

/** A section for a benchmark that could not run at all. */
export function notRunSection(title: string, reason: string, goals: readonly GoalRow[] = []): Section {
  return { title, markdown: `Not run: ${reason}\n`, goals }
}

export function errorText(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err)
  return msg.split('\n').slice(0, 6).join(' / ').slice(0, 600)
}
