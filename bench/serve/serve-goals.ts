/**
 * Goal rows of section 3, one shape at a time, from the rows of one run: the HTTP rows and
 * the RESP GET row of the same node process, Redis's rows of the same run.
 */
import { goal, type GoalRow } from '../kit/report'
import { fmt, fmtRatio, summarize } from '../kit/stats'
import { serverUsPerReq, type Row } from './serve-rows'

export interface ServeGoalRows {
  /** rostore, fast HTTP read path: peak GET, paced GET, multi-get, RESP GET (same node). */
  readonly get: Row
  readonly half: Row
  readonly multi: Row
  readonly respGet: Row
  /** Redis: MGET and GET paced at rostore's paced rate; `skip` when Redis could not run. */
  readonly redisMget: Row
  readonly redisHalf: Row
  readonly redisSkip?: string
}

export function serveGoals(shape: string, r: ServeGoalRows): GoalRow[] {
  const med = (xs: readonly number[]): number => summarize(xs).median
  const both = (a: number, b: number): boolean => Number.isFinite(a) && Number.isFinite(b)
  const notRun = r.redisSkip ? `Redis not run: ${r.redisSkip}` : 'not run'
  const roMulti = med(r.multi.keysPerSec)
  const rdMulti = med(r.redisMget.keysPerSec)
  const p99 = med(r.half.p99)
  const rdP99 = med(r.redisHalf.p99)
  const httpUs = serverUsPerReq(r.get)
  const respUs = serverUsPerReq(r.respGet)
  return [
    goal(
      'serve-multiget',
      `Multi-get (100 keys) keys/s vs Redis MGET, one core each, ${shape}`,
      '≥ 1.5×',
      both(roMulti, rdMulti) ? `${fmtRatio(roMulti, rdMulti)} (${fmt(roMulti)} vs ${fmt(rdMulti)} keys/s)` : notRun,
      both(roMulti, rdMulti) ? roMulti >= 1.5 * rdMulti : undefined,
    ),
    goal(
      'serve-http-vs-resp-cpu',
      `HTTP GET server CPU per request vs RESP GET's, same node, ${shape}`,
      '≤ 1.5×',
      both(httpUs, respUs) ? `${fmt(httpUs / respUs, 3)}× (${fmt(httpUs)} vs ${fmt(respUs)} µs)` : 'not run',
      both(httpUs, respUs) ? httpUs <= 1.5 * respUs : undefined,
    ),
    goal(
      'serve-p99',
      `Single-get p99 at half of peak load, ${shape}`,
      '< 1 ms',
      Number.isFinite(p99) ? `${fmt(p99)} ms at ${fmt(med(r.half.rps))} req/s` : 'not run',
      Number.isFinite(p99) ? p99 < 1 : undefined,
    ),
    goal(
      'serve-p99-vs-redis',
      `Single-get p99 at half of peak load vs Redis's p99 at the same rate, ${shape}`,
      '≤ 2×',
      both(p99, rdP99)
        ? `${fmt(p99 / rdP99, 3)}× (${fmt(p99)} vs ${fmt(rdP99)} ms at ${fmt(med(r.half.rps))} / ${fmt(med(r.redisHalf.rps))} req/s)`
        : notRun,
      both(p99, rdP99) ? p99 <= 2 * rdP99 : undefined,
    ),
  ]
}
