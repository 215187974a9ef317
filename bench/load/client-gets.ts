/**
 * End-to-end gets through a client library, in a child process of its own pinned to the
 * client core: `concurrency` loops of `await get(key)` over one client, either the routing
 * `StoreClient` with its default transport or ioredis on the node's RESP port. Reports
 * requests/s, latency and the child's own CPU per get (process.cpuUsage over the timed
 * phase, so module loading and the warm-up are not counted).
 *
 *   node client-gets.js '<json ClientGetsJob>'     prints a ClientGetsResult as JSON
 */
import { join } from 'node:path'
import Redis from 'ioredis'
import { StoreClient } from '../../client/store-client'
import { ABSENT_FRACTION, keyOf, valueOf } from '../kit/data'
import { runTimed } from '../kit/system'

/** 'ioredis-pipelined': ioredis with enableAutoPipelining (the commands of one tick in one write). */
export type ClientKind = 'store-client' | 'ioredis' | 'ioredis-pipelined'

export interface ClientGetsJob {
  readonly kind: ClientKind
  readonly host: string
  /** The node's HTTP port (StoreClient learns the store's layout there). */
  readonly port: number
  readonly respPort: number
  readonly store: string
  readonly records: number
  readonly valueBytes: number
  readonly seed: number
  /** Loops awaiting one get at a time, all on the one client. */
  readonly concurrency: number
  readonly warmupSec: number
  readonly durationSec: number
  /** Upper bound on the timed gets, whatever the duration. */
  readonly maxRequests: number
}

export interface ClientGetsResult {
  /** 'resp' or 'http' for StoreClient (what 'auto' picked); 'resp' for ioredis. */
  readonly transport: string
  /** Gets of the timed phase. */
  readonly requests: number
  /** Gets since the client connected, warm-up included (the node's CPU is divided by these). */
  readonly totalRequests: number
  readonly hits: number
  readonly secs: number
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** Client CPU µs per get over the timed phase (user + system). */
  readonly cpuUsPerGet: number
  /** Client CPU-seconds per wall second over the timed phase. */
  readonly clientCpu: number
}

/** Keys cycled through by every loop, drawn up front so key making is not the client's cost. */
const KEY_POOL = 65_536

interface Getter {
  readonly transport: string
  get(key: string): Promise<Buffer | undefined | null>
  close(): void
}

async function openGetter(job: ClientGetsJob): Promise<Getter> {
  if (job.kind !== 'store-client') {
    const r = new Redis({
      host: job.host,
      port: job.respPort,
      lazyConnect: true,
      enableReadyCheck: false,
      maxRetriesPerRequest: 1,
      enableAutoPipelining: job.kind === 'ioredis-pipelined',
    })
    await r.connect()
    // getBuffer: the same GET, answered as bytes like StoreClient.get (no UTF-8 decode).
    return { transport: 'resp', get: (k) => r.getBuffer(k), close: () => r.disconnect() }
  }
  const client = await StoreClient.connect({
    cluster: { name: 'bench', nodes: [{ id: 0, host: job.host, port: job.port, respPort: job.respPort, partitions: [0] }] },
    store: job.store,
  })
  return { transport: client.transport, get: (k) => client.get(k), close: () => client.close() }
}

async function run(job: ClientGetsJob): Promise<ClientGetsResult> {
  const g = await openGetter(job)
  try {
    const n = job.records
    for (const id of [0, n - 1, Math.floor(n / 2)]) {
      const v = await g.get(keyOf(id))
      if (!v || !v.equals(valueOf(id, job.valueBytes, job.seed))) throw new Error(`${job.kind}: wrong or missing value for ${keyOf(id)}`)
    }
    if ((await g.get(keyOf(n + 5))) != null) throw new Error(`${job.kind}: an absent key answered a value`)
    const keyspace = Math.round(n / (1 - ABSENT_FRACTION))
    const keys: string[] = []
    let x = job.seed >>> 0 || 1
    for (let i = 0; i < KEY_POOL; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0
      keys.push(keyOf(x % keyspace))
    }
    let total = 4
    const phase = async (secs: number, max: number, lat?: Float64Array): Promise<{ count: number; hits: number }> => {
      const deadline = performance.now() + secs * 1000
      let count = 0
      let hits = 0
      const loop = async (start: number): Promise<void> => {
        let i = start
        while (count < max && performance.now() < deadline) {
          const slot = count++
          const t0 = performance.now()
          const v = await g.get(keys[i++ & (KEY_POOL - 1)] as string)
          if (lat) lat[slot] = performance.now() - t0
          if (v != null) hits++
        }
      }
      await Promise.all(Array.from({ length: job.concurrency }, (_, j) => loop(j * 1021)))
      total += count
      return { count: Math.min(count, max), hits }
    }
    await phase(job.warmupSec, job.maxRequests)
    const lat = new Float64Array(job.maxRequests)
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    const r = await phase(job.durationSec, job.maxRequests, lat)
    const secs = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    if (r.hits === 0 || r.hits === r.count) throw new Error(`${job.kind}: ${r.hits} of ${r.count} keys found (10% are absent)`)
    const sorted = lat.subarray(0, r.count).sort()
    const q = (p: number): number => sorted[Math.min(r.count - 1, Math.floor(p * r.count))] ?? NaN
    const cpuSecs = (cpu.user + cpu.system) / 1e6
    return {
      transport: g.transport,
      requests: r.count,
      totalRequests: total,
      hits: r.hits,
      secs,
      rps: r.count / secs,
      p50Ms: q(0.5),
      p99Ms: q(0.99),
      cpuUsPerGet: (cpuSecs / r.count) * 1e6,
      clientCpu: cpuSecs / secs,
    }
  } finally {
    g.close()
  }
}

/** One run of `job` in a child pinned to core `cpu`, bounded by its phases plus two minutes. */
export async function runClientGets(job: ClientGetsJob, cpu: number): Promise<ClientGetsResult> {
  const t = await runTimed(process.execPath, [join(__dirname, 'client-gets.js'), JSON.stringify(job)], {
    cpu,
    timeoutMs: (job.warmupSec + job.durationSec + 120) * 1000,
  })
  return JSON.parse(t.stdout.trim().split('\n').pop() ?? '{}') as ClientGetsResult
}

if (require.main === module) {
  run(JSON.parse(process.argv[2] ?? '{}') as ClientGetsJob)
    // Exit once written: a client's sockets or timers must not keep the child alive.
    .then((r) => process.stdout.write(`${JSON.stringify(r)}\n`, () => process.exit(0)))
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
      process.exit(1)
    })
}
