/**
 * The reads section 3 measures on the same node process as its HTTP rows, so their ratios
 * compare one run on one node: RESP GETs from redis-benchmark, and end-to-end gets from a
 * client library (the routing StoreClient with its default transport, ioredis GET on the
 * node's RESP port) in a child pinned to the client core.
 */
import { ABSENT_FRACTION, type Dataset } from '../kit/data'
import { runClientGets, type ClientGetsJob, type ClientKind } from '../load/client-gets'
import { ensureRedis, redisBenchmark } from '../peers/redis'
import { fmt, fmtSpread, mdTable, summarize } from '../kit/stats'
import { STORE } from '../kit/rostore'
import { log } from '../kit/system'
import { target } from './resp-rows'
import { emptyRow } from './serve-rows'
import type { ServeProcess } from './serve-process'

const CONNECTIONS = 50
const CLIENT_CPU = 1
/** Bounds the timed gets of one client run (and the latency array it keeps). */
const MAX_CLIENT_GETS = 2_000_000

export interface ClientRow {
  readonly label: string
  readonly kind: ClientKind
  readonly transport: string[]
  readonly rps: number[]
  readonly p50: number[]
  readonly p99: number[]
  readonly clientCpu: number[]
  /** Client CPU µs per get. */
  readonly clientUs: number[]
  /** Node CPU µs per get (the node's CPU over the child's whole run ÷ every get it sent). */
  readonly serverUs: number[]
}

function clientRow(label: string, kind: ClientKind): ClientRow {
  return { label, kind, transport: [], rps: [], p50: [], p99: [], clientCpu: [], clientUs: [], serverUs: [] }
}

export class SameNodeReads {
  readonly respGet = emptyRow(`rostore serve, RESP: GET (redis-benchmark, ${CONNECTIONS} connections)`)
  readonly storeClient = clientRow(`rostore StoreClient.get, default transport, ${CONNECTIONS} concurrent gets`, 'store-client')
  readonly ioredis = clientRow(`ioredis getBuffer on the node's RESP port, ${CONNECTIONS} concurrent gets`, 'ioredis')
  readonly ioredisPipelined = clientRow(`ioredis getBuffer, enableAutoPipelining, ${CONNECTIONS} concurrent gets`, 'ioredis-pipelined')
  private nGet: number | undefined
  /** Why the RESP GET row did not run (redis-benchmark missing). */
  respSkip: string | undefined

  constructor(
    private readonly node: ServeProcess,
    private readonly respPort: number,
    private readonly ds: Dataset,
    private readonly o: { readonly quick: boolean; readonly duration: number; readonly seed: number },
  ) {}

  private bench(requests: number): ReturnType<typeof redisBenchmark> {
    return redisBenchmark(target(this.respPort, [this.node]), ['GET', '__rand_int__'], {
      requests,
      clients: CONNECTIONS,
      keyspace: Math.round(this.ds.shape.records / (1 - ABSENT_FRACTION)),
      cpu: CLIENT_CPU,
      timeoutMs: (this.o.duration * 10 + 120) * 1000,
    })
  }

  /** One redis-benchmark GET run; the first call also sizes the runs to about `duration`. */
  async respGetRun(): Promise<void> {
    this.respSkip ??= await ensureRedis()
    if (this.respSkip) return
    if (this.nGet === undefined) {
      const first = this.o.quick ? 5_000 : 20_000
      this.nGet = Math.max(first, Math.round((await this.bench(first)).rps * this.o.duration))
    }
    const b = await this.bench(this.nGet)
    const r = this.respGet
    r.rps.push(b.rps)
    r.keysPerSec.push(b.rps)
    r.p50.push(b.p50Ms)
    r.p99.push(b.p99Ms)
    // CPU per request times the rate, so "server µs/req" is the node's CPU ÷ requests exactly.
    r.cpu.push((b.cpuSecs / b.requests) * b.rps)
    r.clientCpu.push(b.clientCpu)
    log(`serve ${this.ds.shape.name} ${r.label}: ${b.rps.toFixed(0)} req/s, server ${((b.cpuSecs / b.requests) * 1e6).toFixed(1)} µs/req`)
  }

  /** One run of each client, StoreClient first. */
  async clientRuns(): Promise<void> {
    for (const row of [this.storeClient, this.ioredis, this.ioredisPipelined]) {
      const job: ClientGetsJob = {
        kind: row.kind,
        host: '127.0.0.1',
        port: this.node.port,
        respPort: this.respPort,
        store: STORE,
        records: this.ds.shape.records,
        valueBytes: this.ds.shape.valueBytes,
        seed: this.o.seed,
        concurrency: CONNECTIONS,
        warmupSec: this.o.quick ? 0.5 : 1,
        durationSec: this.o.duration,
        maxRequests: MAX_CLIENT_GETS,
      }
      const c0 = this.node.cpuSeconds()
      const r = await runClientGets(job, CLIENT_CPU)
      const serverUs = ((this.node.cpuSeconds() - c0) / r.totalRequests) * 1e6
      row.transport.push(r.transport)
      row.rps.push(r.rps)
      row.p50.push(r.p50Ms)
      row.p99.push(r.p99Ms)
      row.clientCpu.push(r.clientCpu)
      row.clientUs.push(r.cpuUsPerGet)
      row.serverUs.push(serverUs)
      log(
        `serve ${this.ds.shape.name} ${row.label} (${r.transport}): ${r.rps.toFixed(0)} gets/s, client ${r.cpuUsPerGet.toFixed(1)} µs/get, server ${serverUs.toFixed(1)} µs/get`,
      )
    }
  }

  /** The client pair's table and the ratio sentence under it. */
  clientTable(): string {
    const m = (xs: readonly number[], d = 3): string => fmt(summarize(xs).median, d)
    const cells = (r: ClientRow): string[] =>
      r.rps.length === 0
        ? [r.label, 'not run', '', '', '', '', '', '']
        : [
            r.transport.length > 0 && r.kind === 'store-client' ? `${r.label} (picked ${[...new Set(r.transport)].join(', ')})` : r.label,
            m(r.rps),
            fmtSpread(summarize(r.rps)),
            m(r.p50),
            m(r.p99),
            m(r.clientCpu, 2),
            m(r.clientUs),
            m(r.serverUs),
          ]
    const head = ['client / request', 'gets/s', 'spread', 'p50 ms', 'p99 ms', 'client CPU', 'client µs/get', 'server µs/get']
    const table = mdTable(head, [cells(this.storeClient), cells(this.ioredis), cells(this.ioredisPipelined)])
    const med = (xs: readonly number[]): number => summarize(xs).median
    const ratio = (other: ClientRow, name: string): string | undefined => {
      const [a, b] = [med(this.storeClient.rps), med(other.rps)]
      const [ca, cb] = [med(this.storeClient.clientUs), med(other.clientUs)]
      if (!Number.isFinite(a) || !Number.isFinite(b)) return undefined
      return `÷ ${name}: gets/s ${fmt(a / b, 2)}×, client CPU per get ${fmt(ca / cb, 2)}× (${fmt(ca)} vs ${fmt(cb)} µs)`
    }
    const ratios = [ratio(this.ioredis, 'ioredis'), ratio(this.ioredisPipelined, 'ioredis with auto-pipelining')].filter((x) => x)
    return ratios.length ? `${table}\n\nStoreClient, same node, ${ratios.join('; ')}.` : table
  }
}
