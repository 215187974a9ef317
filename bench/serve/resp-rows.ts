/**
 * Shared pieces of the RESP benchmark (section 3b): the row of a measurement, its table
 * cells, redis-benchmark targets, and the answer check made before a node is loaded.
 */
import { RespClientConnection } from '../../client/resp-connection'
import { keyOf, valueOf, type Dataset } from '../kit/data'
import type { RedisBenchResult, RespTarget } from '../peers/redis'
import type { ServeProcess } from './serve-process'
import { fmt, fmtSpread, summarize } from '../kit/stats'
import { log } from '../kit/system'

export const CONNECTIONS = 50
export const PIPELINE = 16
export const BATCH = 100
export const CLIENT_CPU = 1

export interface Row {
  readonly label: string
  readonly rps: number[]
  readonly keysPerSec: number[]
  readonly p50: number[]
  readonly p99: number[]
  readonly cpu: number[]
  /** Server CPU µs per request (per key for the forwarding rows). */
  readonly usPerReq: number[]
  readonly clientCpu: number[]
}

export const row = (label: string): Row => ({ label, rps: [], keysPerSec: [], p50: [], p99: [], cpu: [], usPerReq: [], clientCpu: [] })

export function push(r: Row, b: RedisBenchResult, keysPerRequest: number): void {
  r.rps.push(b.rps)
  r.keysPerSec.push(b.rps * keysPerRequest)
  r.p50.push(b.p50Ms)
  r.p99.push(b.p99Ms)
  r.cpu.push(b.serverCpu)
  r.usPerReq.push((b.cpuSecs / b.requests) * 1e6)
  r.clientCpu.push(b.clientCpu)
  log(
    `resp ${r.label}: ${b.rps.toFixed(0)} req/s, p50 ${b.p50Ms} ms, p99 ${b.p99Ms} ms, server ${((b.cpuSecs / b.requests) * 1e6).toFixed(1)} µs/req, client CPU ${b.clientCpu.toFixed(2)}`,
  )
}

export function cells(r: Row): string[] {
  if (r.rps.length === 0) return [r.label, 'not run', '', '', '', '', '', '', '']
  const rps = summarize(r.rps)
  const m = (xs: number[], d = 1): string => fmt(summarize(xs).median, d)
  return [
    r.label,
    fmt(rps.median),
    fmtSpread(rps),
    fmt(summarize(r.keysPerSec).median),
    m(r.p50, 3),
    m(r.p99, 3),
    m(r.cpu, 2),
    m(r.usPerReq),
    m(r.clientCpu, 2),
  ]
}

export const HEAD = ['system / request', 'requests/s', 'spread', 'keys/s', 'p50 ms', 'p99 ms', 'server CPU', 'server µs/req', 'client CPU']

/** A rostore node process as a redis-benchmark target (CPU of one or more node processes). */
export function target(port: number, procs: readonly ServeProcess[]): RespTarget {
  return { port, cpuSeconds: () => procs.reduce((n, p) => n + p.cpuSeconds(), 0) }
}

/** Checks the RESP answers of a node before loading it: present and absent keys, MGET. */
export async function verifyResp(port: number, ds: Dataset): Promise<void> {
  const c = new RespClientConnection({ host: '127.0.0.1', port, timeoutMs: 10_000 })
  try {
    const n = ds.shape.records
    const ids = [0, n - 1, Math.floor(n / 2)]
    for (const id of ids) {
      const v = await c.command(['GET', keyOf(id)])
      if (!Buffer.isBuffer(v) || !v.equals(valueOf(id, ds.shape.valueBytes, ds.seed)))
        throw new Error(`RESP GET ${keyOf(id)}: wrong or missing value`)
    }
    if ((await c.command(['GET', keyOf(n + 3)])) !== null) throw new Error('RESP GET of an absent key answered a value')
    const many = await c.command(['MGET', ...ids.map(keyOf), keyOf(n + 4)])
    if (
      !Array.isArray(many) ||
      many.length !== 4 ||
      many[3] !== null ||
      !ids.every((id, j) => Buffer.isBuffer(many[j]) && (many[j] as Buffer).equals(valueOf(id, ds.shape.valueBytes, ds.seed)))
    )
      throw new Error('RESP MGET: wrong answer')
  } finally {
    c.close()
  }
}
