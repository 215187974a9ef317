import { Counter, Gauge, type Registry } from 'prom-client'
import { DEFAULT_REQUEST_BUDGET_BYTES, RequestBudget } from '../http/request-budget'

/** Key counts of one store: answered here, by another node, or here for another node. */
export interface StoreKeyStats {
  localHits: number
  localMisses: number
  forwardedHits: number
  forwardedMisses: number
  /** Keys other nodes forwarded here (ROSTORE.GETS). */
  peerHits: number
  peerMisses: number
}

/**
 * Counters of the RESP listener. Plain numbers bumped on the request path (a prom-client
 * `inc()` with labels costs more than a lookup); `/metrics` reads them when scraped and
 * INFO prints them.
 */
export class RespStats {
  connectionsTotal = 0
  connected = 0
  rejectedConnections = 0
  commands = 0
  protocolErrors = 0
  authFailures = 0
  /** Keys answered from this node's files. */
  localKeys = 0
  /** Commands whose local records were cold: answered after a read on the libuv pool. */
  coldCommands = 0
  /** Keys sent to another node. */
  forwardedKeys = 0
  /** Forward attempts that failed (connection, timeout, error reply, older version) and went to the next replica or failed. */
  forwardFailures = 0
  /** Many-key commands whose keys were first answered by several versions, read again from one. */
  mixedVersionReads = 0
  /** Keys answered here for another node (its forwards). */
  peerKeys = 0
  /** Connections closed because they stopped reading their replies (send timeout). */
  sendTimeouts = 0
  idleTimeouts = 0
  /** Connections refused (-RO_BUSY) and closed because the request budget was spent. */
  busyRefusals = 0
  netInputBytes = 0
  readonly stores = new Map<string, StoreKeyStats>()
  /** Calls per command, by the command table's index. */
  readonly calls: Float64Array

  constructor(
    commandCount: number,
    /** Request bytes held for commands not whole yet, against the serving process's budget. */
    readonly requestBudget = new RequestBudget(DEFAULT_REQUEST_BUDGET_BYTES),
  ) {
    this.calls = new Float64Array(commandCount)
  }

  /** Per-store counters; only stores the node serves get an entry, so labels stay bounded. */
  store(name: string): StoreKeyStats {
    let s = this.stores.get(name)
    if (!s) {
      s = { localHits: 0, localMisses: 0, forwardedHits: 0, forwardedMisses: 0, peerHits: 0, peerMisses: 0 }
      this.stores.set(name, s)
    }
    return s
  }

  get keyspaceHits(): number {
    let n = 0
    for (const s of this.stores.values()) n += s.localHits + s.forwardedHits
    return n
  }

  get keyspaceMisses(): number {
    let n = 0
    for (const s of this.stores.values()) n += s.localMisses + s.forwardedMisses
    return n
  }
}

/**
 * Adds the RESP metrics to a node's registry: they are read from `stats` at scrape time.
 * `commandNames` labels the per-command counter.
 */
export function registerRespMetrics(registry: Registry, stats: RespStats, commandNames: readonly string[]): void {
  const registers = [registry]
  new Counter({
    name: 'rostore_resp_keys_total',
    help: 'Keys read over RESP by store, by who answered (local: this node; forwarded: another node; peer: this node, for another node) and result',
    labelNames: ['store', 'source', 'result'],
    registers,
    collect() {
      this.reset()
      for (const [store, s] of stats.stores) {
        this.inc({ store, source: 'local', result: 'hit' }, s.localHits)
        this.inc({ store, source: 'local', result: 'miss' }, s.localMisses)
        this.inc({ store, source: 'forwarded', result: 'hit' }, s.forwardedHits)
        this.inc({ store, source: 'forwarded', result: 'miss' }, s.forwardedMisses)
        this.inc({ store, source: 'peer', result: 'hit' }, s.peerHits)
        this.inc({ store, source: 'peer', result: 'miss' }, s.peerMisses)
      }
    },
  })
  new Counter({
    name: 'rostore_resp_commands_total',
    help: 'RESP commands by name (unknown and refused commands under "other")',
    labelNames: ['command'],
    registers,
    collect() {
      this.reset()
      commandNames.forEach((command, i) => {
        const n = stats.calls[i] ?? 0
        if (n > 0) this.inc({ command }, n)
      })
    },
  })
  const simple: [string, string, () => number][] = [
    ['rostore_resp_connections_total', 'RESP connections accepted', () => stats.connectionsTotal],
    ['rostore_resp_rejected_connections_total', 'RESP connections refused (--resp-max-clients)', () => stats.rejectedConnections],
    ['rostore_resp_protocol_errors_total', 'RESP connections closed for a protocol error', () => stats.protocolErrors],
    ['rostore_resp_auth_failures_total', 'RESP AUTH attempts with a wrong token', () => stats.authFailures],
    [
      'rostore_resp_forward_failures_total',
      'Forwards to another node that failed (then tried on the next replica)',
      () => stats.forwardFailures,
    ],
    [
      'rostore_resp_mixed_version_reads_total',
      'Many-key RESP commands whose keys were first answered by several versions (a split cluster), read again from one',
      () => stats.mixedVersionReads,
    ],
    ['rostore_resp_send_timeouts_total', 'RESP connections closed because the client stopped reading', () => stats.sendTimeouts],
    [
      'rostore_resp_busy_refusals_total',
      'RESP connections refused (-RO_BUSY) and closed because the request budget of the process was spent',
      () => stats.busyRefusals,
    ],
  ]
  for (const [name, help, read] of simple) {
    new Counter({
      name,
      help,
      registers,
      collect() {
        this.reset()
        this.inc(read())
      },
    })
  }
  new Gauge({
    name: 'rostore_resp_connected_clients',
    help: 'Open RESP connections',
    registers,
    collect() {
      this.set(stats.connected)
    },
  })
}
