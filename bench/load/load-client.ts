/**
 * Load generator of the serving benchmark, run as its own process (pinned to the core the
 * server is not on):  node load-client.js '<json LoadJob>'
 *
 * autocannon (programmatic API) with keep-alive connections, no pipelining, one request in
 * flight per connection, sending GET /stores/<s>/keys/<key> or POST .../multi-get of
 * `batch` keys drawn from the uniform stream (10% absent keys). Bounded by `durationSec`
 * (and autocannon's per-request timeout). Latency is taken from every response's own
 * hrtime duration (autocannon's histogram has 1 ms resolution, too coarse for a sub-ms
 * p99). Only ever targets 127.0.0.1. Prints a LoadResult as JSON.
 */
import autocannon from 'autocannon'
import { encodeKeys } from '../../formats/wire/multiget'
import { keyOf, streamIds } from '../kit/data'
import { percentileSorted } from '../kit/stats'

export interface LoadJob {
  readonly port: number
  readonly store: string
  readonly mode: 'get' | 'multiget'
  readonly records: number
  readonly seed: number
  /** Keys per multi-get. */
  readonly batch: number
  readonly connections: number
  readonly durationSec: number
  /** Requests per second over all connections; unset = as fast as possible. */
  readonly overallRate?: number
}

export interface LoadResult {
  readonly requests: number
  readonly secs: number
  readonly rps: number
  /** Keys answered per second (rps × batch for multi-gets). */
  readonly keysPerSec: number
  readonly status200: number
  readonly status404: number
  readonly otherStatus: number
  readonly errors: number
  readonly timeouts: number
  readonly p50Ms: number
  readonly p90Ms: number
  readonly p99Ms: number
  readonly maxMs: number
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '{}') as LoadJob
  const distinct = job.mode === 'get' ? 200_000 : 2_000
  const ids = streamIds('uniform', job.records, distinct * (job.mode === 'get' ? 1 : job.batch), job.seed + 17)
  let next = 0
  const paths: string[] = []
  const bodies: Buffer[] = []
  if (job.mode === 'get') {
    for (let j = 0; j < distinct; j++) paths.push(`/stores/${job.store}/keys/${keyOf(ids[j] as number)}`)
  } else {
    for (let j = 0; j < distinct; j++) {
      const keys: string[] = []
      for (let k = 0; k < job.batch; k++) keys.push(keyOf(ids[j * job.batch + k] as number))
      bodies.push(encodeKeys(keys))
    }
  }
  const latencies: number[] = []
  let s200 = 0
  let s404 = 0
  let other = 0
  const request =
    job.mode === 'get'
      ? {
          method: 'GET' as const,
          path: paths[0] as string,
          setupRequest: (req: Record<string, unknown>) => {
            req.path = paths[next++ % paths.length]
            return req
          },
        }
      : {
          method: 'POST' as const,
          path: `/stores/${job.store}/multi-get`,
          headers: { 'content-type': 'application/octet-stream' },
          body: bodies[0] as Buffer,
          setupRequest: (req: Record<string, unknown>) => {
            req.body = bodies[next++ % bodies.length]
            return req
          },
        }
  const started = performance.now()
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `http://127.0.0.1:${job.port}`,
        connections: job.connections,
        pipelining: 1,
        duration: job.durationSec,
        timeout: 10,
        ...(job.overallRate ? { overallRate: job.overallRate } : {}),
        requests: [request as unknown as autocannon.Request],
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    )
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      latencies.push(responseTime)
      if (statusCode === 200) s200++
      else if (statusCode === 404) s404++
      else other++
    })
  })
  const secs = Math.max(1e-9, (performance.now() - started) / 1000)
  const sorted = Float64Array.from(latencies).sort()
  const requests = s200 + s404
  const out: LoadResult = {
    requests,
    secs,
    rps: requests / secs,
    keysPerSec: (requests * (job.mode === 'get' ? 1 : job.batch)) / secs,
    status200: s200,
    status404: s404,
    otherStatus: other,
    errors: result.errors,
    timeouts: result.timeouts,
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
