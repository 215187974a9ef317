/**
 * Open-loop, evenly paced GET load for "latency at a given rate", run as its own process:
 *   node paced-client.js '<json PacedJob>'
 *
 * Request j is due at start + j / rate, whatever happened to earlier requests; it goes out
 * on a free keep-alive connection as soon as it is due, and its latency is measured from
 * its due time, so a stalled server is charged for the requests that queue behind the
 * stall (no coordinated omission, as wrk2 does). autocannon's overallRate is not used
 * for this: it releases each connection's share of a second in bursts, so with 50
 * connections its "latency at a rate" is mostly the queue of its own bursts.
 *
 * Raw sockets with prebuilt request bytes keep the client's own cost per request small;
 * responses are parsed just enough (status line, Content-Length). Bounded by
 * `durationSec` plus a drain of at most 10 s. Only ever targets 127.0.0.1. Prints a
 * LoadResult as JSON.
 */
import { connect, type Socket } from 'node:net'
import { keyOf, streamIds, type StreamKind } from '../kit/data'
import type { LoadResult } from './load-client'
import { percentileSorted } from '../kit/stats'

export interface PacedJob {
  readonly port: number
  readonly store: string
  readonly records: number
  readonly seed: number
  readonly rate: number
  readonly connections: number
  readonly durationSec: number
  /** 'http' (default): GET /stores/<store>/keys/<key>; 'resp': `GET <key>` on a RESP port (bare keys). */
  readonly protocol?: 'http' | 'resp'
  /** The key stream (default uniform) and how many draws it cycles through (default 200,000). */
  readonly kind?: StreamKind
  readonly distinct?: number
}

/** One parsed response: bytes it took and its status (200 hit, 404 miss, else other); undefined when incomplete; null when unparseable. */
type Parsed = { readonly used: number; readonly status: number } | undefined | null

function parseHttp(buf: Buffer): Parsed {
  const end = buf.indexOf('\r\n\r\n')
  if (end < 0) return undefined
  const head = buf.toString('latin1', 0, end)
  const m = /\r\ncontent-length:\s*(\d+)/i.exec(head)
  if (!m) return null
  const need = end + 4 + Number(m[1])
  return buf.length < need ? undefined : { used: need, status: Number(head.slice(9, 12)) }
}

/** `$-1` (miss), `$N` + N bytes (hit), `-...` (error, counted as other). */
function parseResp(buf: Buffer): Parsed {
  const nl = buf.indexOf('\r\n')
  if (nl < 0) return undefined
  if (buf[0] === 0x2d) return { used: nl + 2, status: 500 }
  if (buf[0] !== 0x24) return null
  const n = Number(buf.toString('latin1', 1, nl))
  if (n < 0) return { used: nl + 2, status: 404 }
  const need = nl + 2 + n + 2
  return buf.length < need ? undefined : { used: need, status: 200 }
}

interface Conn {
  readonly socket: Socket
  busy: boolean
  due: number
  buf: Buffer
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '{}') as PacedJob
  const ids = streamIds(job.kind ?? 'uniform', job.records, job.distinct ?? 200_000, job.seed + 17)
  const requests: Buffer[] = []
  const resp = job.protocol === 'resp'
  for (let j = 0; j < ids.length; j++) {
    const key = keyOf(ids[j] as number)
    requests.push(
      Buffer.from(
        resp
          ? `*2\r\n$3\r\nGET\r\n$${key.length}\r\n${key}\r\n`
          : `GET /stores/${job.store}/keys/${key} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
        'latin1',
      ),
    )
  }
  const parse = resp ? parseResp : parseHttp
  const total = Math.max(1, Math.round(job.rate * job.durationSec))
  const interval = 1000 / job.rate
  const latencies = new Float64Array(total)
  let done = 0
  let s200 = 0
  let s404 = 0
  let other = 0
  let errors = 0
  let sent = 0
  const conns: Conn[] = await Promise.all(
    Array.from(
      { length: job.connections },
      () =>
        new Promise<Conn>((resolve, reject) => {
          const socket = connect({ host: '127.0.0.1', port: job.port, noDelay: true })
          socket.once('connect', () => resolve({ socket, busy: false, due: 0, buf: Buffer.alloc(0) }))
          socket.once('error', reject)
        }),
    ),
  )
  let start = 0
  let finish: (() => void) | undefined
  const free: Conn[] = [...conns]

  const pump = (): void => {
    const now = performance.now()
    while (sent < total && free.length > 0) {
      const due = start + sent * interval
      if (due > now) break
      const c = free.pop() as Conn
      c.busy = true
      c.due = due
      c.socket.write(requests[sent % requests.length] as Buffer)
      sent++
    }
  }

  for (const c of conns) {
    c.socket.on('data', (chunk: Buffer) => {
      c.buf = c.buf.length === 0 ? chunk : Buffer.concat([c.buf, chunk])
      for (;;) {
        const r = parse(c.buf)
        if (r === undefined) return
        if (r === null) {
          errors++
          c.socket.destroy()
          return
        }
        const status = r.status
        c.buf = c.buf.subarray(r.used)
        if (done < total) latencies[done] = performance.now() - c.due
        done++
        if (status === 200) s200++
        else if (status === 404) s404++
        else other++
        c.busy = false
        free.push(c)
        if (done >= total) finish?.()
        else pump()
      }
    })
    c.socket.on('error', () => {
      errors++
    })
  }

  start = performance.now()
  const deadline = start + (job.durationSec + 10) * 1000
  await new Promise<void>((resolve) => {
    finish = resolve
    const tick = (): void => {
      if (done >= total || performance.now() > deadline) {
        resolve()
        return
      }
      pump()
      // Spin on setImmediate while requests are due soon; the client core is ours.
      setImmediate(tick)
    }
    tick()
  })
  const secs = (performance.now() - start) / 1000
  for (const c of conns) c.socket.destroy()
  const sorted = latencies.subarray(0, Math.min(done, total)).sort()
  const out: LoadResult = {
    requests: s200 + s404,
    secs,
    rps: (s200 + s404) / secs,
    keysPerSec: (s200 + s404) / secs,
    status200: s200,
    status404: s404,
    otherStatus: other,
    errors: errors + (total - done),
    timeouts: 0,
    p50Ms: percentileSorted(sorted, 50),
    p90Ms: percentileSorted(sorted, 90),
    p99Ms: percentileSorted(sorted, 99),
    maxMs: sorted.length ? (sorted[sorted.length - 1] as number) : NaN,
  }
  process.stdout.write(`${JSON.stringify(out)}\n`)
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
