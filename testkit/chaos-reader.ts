import type { Cluster } from '../cluster/cluster'
import { StoreClient } from '../client/store-client'

/**
 * Continuous reads through the routing client (HTTP and RESP, alternately) during a chaos
 * run: random multi-gets whose every value names its version (`v<V>-<i>`), each checked:
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
  }

  private async run(): Promise<void> {
    for (let turn = 0; this.running; turn++) {
      const client = this.clients[turn % this.clients.length]!
      const idx = Array.from({ length: 40 }, () => Math.floor(this.rand() * this.keys))
      const allowed = this.allowed
      let values: (Buffer | undefined)[]
      try {
        values = await client.getMany(idx.map((i) => `key-${i}`))
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
