import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { RequestBudget } from './http/request-budget'
import type { ResidencyStats } from '../formats/store/read/store-reader-api'
import type { SwapResult } from '../swapper/events'
import type { DataDir } from '../swapper/data-dir'
import type { ServingMirror } from '../swapper/serving-mirror'

/** Label for requests naming a store this node does not have (keeps label sets bounded). */
export const UNKNOWN_STORE = '_unknown'

/**
 * The node's metrics, in a Registry of its own (never prom-client's global one), so
 * several nodes in one process (tests) do not share counters.
 */
export class NodeMetrics {
  readonly registry = new Registry()
  readonly requests: Counter<'store' | 'op' | 'status'>
  readonly latency: Histogram<'store' | 'op'>
  readonly keys: Counter<'store' | 'result'>
  readonly swaps: Counter<'store'>
  readonly rollbacks: Counter<'store'>
  readonly swapLatency: Histogram<'store' | 'kind'>
  readonly errors: Counter<'store' | 'code'>
  readonly versionsDeleted: Counter<'store'>
  readonly jobs: Counter<'kind' | 'state'>
  readonly connectionsDropped: Counter
  readonly busyBodies: Counter
  /** Requests of the fast HTTP read path (http/fast-host.ts): answered there, or handed to node:http with their connection. */
  readonly fastReads: Counter<'result'>

  constructor(dataDir: () => DataDir<ServingMirror> | undefined, defaults = true) {
    const registers = [this.registry]
    if (defaults) collectDefaultMetrics({ register: this.registry })
    this.requests = new Counter({
      name: 'rostore_requests_total',
      help: 'HTTP requests by store, operation and status code',
      labelNames: ['store', 'op', 'status'],
      registers,
    })
    this.latency = new Histogram({
      name: 'rostore_request_duration_seconds',
      help: 'Time from request to the end of the response, by store and operation',
      labelNames: ['store', 'op'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers,
    })
    this.keys = new Counter({
      name: 'rostore_keys_read_total',
      help: 'Keys looked up by single and multi gets, by result (hit or miss)',
      labelNames: ['store', 'result'],
      registers,
    })
    this.swaps = new Counter({ name: 'rostore_swaps_total', help: 'Swaps that changed the live version', labelNames: ['store'], registers })
    this.rollbacks = new Counter({ name: 'rostore_rollbacks_total', help: 'Rollbacks', labelNames: ['store'], registers })
    this.swapLatency = new Histogram({
      name: 'rostore_swap_duration_seconds',
      help: 'Open of the new version + pointer flip + in-memory replace',
      labelNames: ['store', 'kind'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5, 30],
      registers,
    })
    this.errors = new Counter({
      name: 'rostore_errors_total',
      help: 'Failed requests and operations by error code',
      labelNames: ['store', 'code'],
      registers,
    })
    this.versionsDeleted = new Counter({
      name: 'rostore_versions_deleted_total',
      help: 'Version directories deleted by retention or by the admin API',
      labelNames: ['store'],
      registers,
    })
    this.jobs = new Counter({
      name: 'rostore_jobs_total',
      help: 'Finished admin jobs by kind and final state',
      labelNames: ['kind', 'state'],
      registers,
    })
    this.connectionsDropped = new Counter({
      name: 'rostore_connections_dropped_total',
      help: 'Connections closed on arrival because --max-connections were open',
      registers,
    })
    this.fastReads = new Counter({
      name: 'rostore_http_fast_reads_total',
      help: 'Requests on the fast HTTP read path: answered there, or handed to node:http with their connection',
      labelNames: ['result'],
      registers,
    })
    this.busyBodies = new Counter({
      name: 'rostore_busy_bodies_total',
      help: 'Request bodies refused (503 RO_BUSY) because the request budget of the serving process was spent',
      registers,
    })
    new Gauge({
      name: 'rostore_store_live_version',
      help: 'Live version of each store (0 when none)',
      labelNames: ['store'],
      registers,
      collect() {
        this.reset()
        for (const s of dataDir()?.all() ?? []) this.set({ store: s.store }, s.liveVersion ?? 0)
      },
    })
    new Gauge({
      name: 'rostore_store_records',
      help: 'Records in the live version of each store',
      labelNames: ['store'],
      registers,
      collect() {
        this.reset()
        for (const s of dataDir()?.all() ?? []) this.set({ store: s.store }, s.liveMetadata?.records ?? 0)
      },
    })
    new Gauge({
      name: 'rostore_store_versions',
      help: 'Version directories on disk of each store (live + backups + staged)',
      labelNames: ['store'],
      registers,
      collect() {
        this.reset()
        for (const s of dataDir()?.all() ?? []) this.set({ store: s.store }, s.versions().length)
      },
    })
    new Gauge({
      name: 'rostore_store_stale',
      help: '1 when the store is marked stale (reads answer 503)',
      labelNames: ['store'],
      registers,
      collect() {
        this.reset()
        for (const s of dataDir()?.all() ?? []) this.set({ store: s.store }, s.stale ? 1 : 0)
      },
    })
    this.residencyGauges(dataDir, registers)
  }
  /** The request bytes `budget` holds, read when scraped (one gauge per serving process; a supervisor sums them). */
  watchRequestBudget(budget: RequestBudget): void {
    new Gauge({
      name: 'rostore_buffered_request_bytes',
      help: 'Request bytes held for requests not whole yet (multi-get bodies, RESP commands cut across reads)',
      registers: [this.registry],
      collect() {
        this.set(budget.held)
      },
    })
  }

  /**
   * Gauges of the live readers' residency maps (docs/SERVING.md, "Stores larger than
   * memory"), read when scraped. Counts start again at each swap (a new reader).
   */
  private residencyGauges(dataDir: () => DataDir<ServingMirror> | undefined, registers: Registry[]): void {
    const gauge = (name: string, help: string, value: (r: ResidencyStats) => number | undefined): void => {
      new Gauge({
        name,
        help,
        labelNames: ['store'],
        registers,
        async collect() {
          this.reset()
          for (const s of dataDir()?.all() ?? []) {
            const r = await s.serving.residency()
            const v = r && value(r)
            if (v !== undefined) this.set({ store: s.store }, v)
          }
        },
      })
    }
    gauge('rostore_store_lookups', 'Lookups of the live version that asked its residency map', (r) => r.reads)
    gauge('rostore_store_cold_lookups', 'Lookups whose record was not in memory: read on the libuv pool', (r) => r.coldReads)
    gauge('rostore_store_page_cache_hit_ratio', 'Share of lookups whose record was in memory', (r) =>
      r.reads === 0 ? undefined : 1 - r.coldReads / r.reads,
    )
    gauge('rostore_store_cold_reads_in_flight', 'Cold reads started and not finished', (r) => r.coldInFlight)
    gauge('rostore_store_pages_read_per_cold_lookup', 'Pages a cold lookup brought in, on average', (r) =>
      r.coldReads === 0 ? undefined : r.pagesRead / r.coldReads,
    )
    gauge('rostore_store_resident_ratio', 'Share of the live data pages in the page cache (last refresh)', (r) =>
      r.pages === 0 ? undefined : r.residentPages / r.pages,
    )
    gauge('rostore_store_index_locked', '1 when the live index files are locked in memory', (r) => (r.indexLocked ? 1 : 0))
  }

  onSwap(r: SwapResult): void {
    if (!r.changed) return
    if (r.kind === 'rollback') this.rollbacks.inc({ store: r.store })
    else this.swaps.inc({ store: r.store })
    this.swapLatency.observe({ store: r.store, kind: r.kind }, r.elapsedMs / 1000)
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() }
  }
}
