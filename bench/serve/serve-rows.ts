/**
 * Rows of section 3 (serving over loopback): one measured line of the table, run by run,
 * and its cells.
 */
import { fmt, fmtSpread, summarize } from '../kit/stats'

export interface Row {
  readonly label: string
  readonly rps: number[]
  readonly keysPerSec: number[]
  readonly p50: number[]
  readonly p99: number[]
  /** Server CPU-seconds per wall second. */
  readonly cpu: number[]
  readonly clientCpu: number[]
  readonly note?: string
  readonly error?: string
}

export function emptyRow(label: string, error?: string, note?: string): Row {
  return { label, rps: [], keysPerSec: [], p50: [], p99: [], cpu: [], clientCpu: [], error, note }
}

/** Median server CPU µs per request: CPU-seconds per wall second over requests per wall second, run by run. */
export function serverUsPerReq(r: Row): number {
  return summarize(r.cpu.map((cpu, i) => (cpu / (r.rps[i] as number)) * 1e6)).median
}

export const SERVE_HEAD = [
  'system / request',
  'requests/s',
  'spread',
  'keys/s',
  'p50 ms',
  'p99 ms',
  'server CPU',
  'server µs/req',
  'client CPU',
]

export function rowCells(r: Row, skip?: string): string[] {
  if (skip) return [r.label, `not run: ${skip}`, '', '', '', '', '', '', '']
  if (r.rps.length === 0) return [r.label, `not run: ${r.error ?? 'no result'}`, '', '', '', '', '', '', '']
  const rps = summarize(r.rps)
  return [
    r.label,
    fmt(rps.median),
    fmtSpread(rps),
    fmt(summarize(r.keysPerSec).median),
    fmt(summarize(r.p50).median),
    fmt(summarize(r.p99).median),
    fmt(summarize(r.cpu).median, 2),
    fmt(serverUsPerReq(r), 3),
    fmt(summarize(r.clientCpu).median, 2),
  ]
}
