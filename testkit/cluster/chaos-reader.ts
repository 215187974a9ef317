import type { Cluster } from '../../cluster/cluster'
import { RespClientConnection } from '../../client/resp-connection'
import { StoreClient } from '../../client/store-client'
import { RespErrorReply } from '../../formats/wire/resp'

/**
 * Continuous reads during a chaos run, in turn through the routing client (HTTP, RESP)
 * and as a plain Redis client would, `MGET` through a random node's RESP port (the node
 * reads its own keys and forwards the others): random multi-gets whose every value names its version (`v<V>-<i>`), each checked:
 * the right value for its key, one version per multi-get, a version the harness allows at
 * the moment the read started. Failed reads are counted (availability), not violations.
 */
export class ChaosReader {
  /** Versions a read may return; set by the harness before and after each operation. */
  allowed: ReadonlySet<number> = new Set()
  /** Count reads older than one seen before (off during a rollback, where older is right). */
  watchRegressions = true
  reads = 0
  readErrors = 0
  /** Outside a rollback, a read older than one this reader already got (a violation too). */
  regressions = 0
  readonly violations: string[] = []
  private lastSeen = 0
  private running = true
  private loop: Promise<void> | undefined
  private clients: StoreClient[] = []
  private ports: RespClientConnection[] = []

  constructor(
    private readonly cluster: Cluster,
    private readonly store: string,
    private readonly keys: number,
    private readonly rand: () => number,
  ) {}

  async start(): Promise<void> {
    this.clients = await Promise.all(
      (['http', 'resp'] as const).map((transport) =>
        StoreClient.connect({ cluster: this.cluster, store: this.store, timeoutMs: 2000, transport }),
      ),
    )
    this.ports = this.cluster.nodes.flatMap((n) =>
      n.respPort === undefined ? [] : [new RespClientConnection({ host: n.host, port: n.respPort, timeoutMs: 2000 })],
    )
    this.loop = this.run()
  }

  /** Forget the last version seen (a rollback makes older versions right again). */
  resetMonotonic(): void {
    this.lastSeen = 0
  }

  /** Resolves once `n` more reads finished (or 10 s passed). */
  async more(n: number): Promise<void> {
    const want = this.reads + this.readErrors + n
    for (let i = 0; i < 500 && this.reads + this.readErrors < want; i++) await new Promise((r) => setTimeout(r, 20))
  }

  async stop(): Promise<void> {
    this.running = false
    await this.loop
    for (const c of this.clients) c.close()
    for (const c of this.ports) c.close()
  }

  /** `MGET` of the keys through one node's RESP port; throws on an error reply. */
  private async mget(node: RespClientConnection, keys: readonly string[]): Promise<(Buffer | undefined)[]> {
    const r = await node.command(['MGET', ...keys.map((k) => `${this.store}:${k}`)])
    if (r instanceof RespErrorReply || !Array.isArray(r))
      throw new Error(`MGET: ${r instanceof RespErrorReply ? r.message : 'not an array'}`)
    return r.map((v) => (Buffer.isBuffer(v) ? v : undefined))
  }

  private async run(): Promise<void> {
    for (let turn = 0; this.running; turn++) {
      const kinds = this.clients.length + (this.ports.length > 0 ? 1 : 0)
      const client = this.clients[turn % kinds]
      const node = this.ports[Math.floor(this.rand() * this.ports.length)]
      const idx = Array.from({ length: 40 }, () => Math.floor(this.rand() * this.keys))
      const keys = idx.map((i) => `key-${i}`)
      const allowed = this.allowed
      let values: (Buffer | undefined)[]
      try {
        values = client ? await client.getMany(keys) : await this.mget(node!, keys)
      } catch {
        this.readErrors++
        await new Promise((r) => setTimeout(r, 20))
        continue
      }
      this.reads++
      this.check(idx, values, allowed)
    }
  }

  private check(idx: readonly number[], values: readonly (Buffer | undefined)[], allowed: ReadonlySet<number>): void {
    const versions = new Set<number>()
    values.forEach((val, j) => {
      const m = /^v(\d+)-(\d+)$/.exec(val?.toString() ?? '')
      if (!m || Number(m[2]) !== idx[j]) this.violation(`wrong value for key-${idx[j]}: ${JSON.stringify(val?.toString().slice(0, 40))}`)
      else versions.add(Number(m[1]))
    })
    if (versions.size > 1) this.violation(`one multi-get mixed versions ${[...versions].join(', ')}`)
    const v = [...versions][0]
    if (v === undefined) return
    if (!allowed.has(v)) this.violation(`read version ${v}, allowed ${[...allowed].join(', ')}`)
    if (this.watchRegressions && v < this.lastSeen) {
      this.regressions++
      this.violation(`read version ${v} after having read ${this.lastSeen}`)
    }
    this.lastSeen = Math.max(this.lastSeen, v)
  }

  private violation(what: string): void {
    if (this.violations.length < 50) this.violations.push(what)
  }
}
