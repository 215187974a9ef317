import type { StoreClient } from '../../client/store-client'
import { errorMessage } from '../../common/errors'

/**
 * A client reading without pause while a test changes the cluster (pushes, layout changes,
 * rollbacks): random multi-gets of 20 keys and single gets, every answer checked. Values
 * are `v<version>:<key>` (testkit/cluster/layout-files.ts buildKeys), so each answer names the
 * version that gave it: a multi-get mixing versions, a wrong or missing value, or a
 * failed read is recorded, never hidden by a retry.
 */
export class VersionReader {
  reads = 0
  readonly failed: string[] = []
  readonly wrong: string[] = []
  readonly seen = new Set<number>()
  private stopped = false
  private done: Promise<void> | undefined

  constructor(
    readonly name: string,
    readonly client: StoreClient,
    private seed: number,
    private readonly keys: number,
    private readonly keyOf: (i: number) => string,
  ) {}

  start(): void {
    this.done = this.loop()
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.done
  }

  /** Resolves once this reader has done `n` more reads (progress, not time). */
  async more(n: number): Promise<void> {
    const target = this.reads + n
    for (let i = 0; i < 100_000 && this.reads < target && !this.stopped; i++) await new Promise((r) => setTimeout(r, 5))
  }

  private next(): number {
    this.seed = (this.seed * 1103515245 + 12345) % 2147483648
    return this.seed % this.keys
  }

  private check(i: number, value: Buffer | undefined): number | undefined {
    const text = value?.toString()
    const m = text === undefined ? null : /^v(\d+):(.*)$/.exec(text)
    if (!m || m[2] !== this.keyOf(i)) {
      this.wrong.push(`${this.keyOf(i)} -> ${String(text)}`)
      return undefined
    }
    return Number(m[1])
  }

  private async loop(): Promise<void> {
    // Bounded: the tests' phases end long before.
    for (let n = 0; n < 200_000 && !this.stopped; n++) {
      const idx = Array.from({ length: 20 }, () => this.next())
      try {
        const values = await this.client.getMany(idx.map(this.keyOf))
        const versions = new Set(values.map((v, j) => this.check(idx[j]!, v)))
        if (versions.size !== 1) this.wrong.push(`a multi-get mixed versions ${[...versions].join(', ')}`)
        for (const v of versions) if (v !== undefined) this.seen.add(v)
        const one = this.next()
        const v = this.check(one, await this.client.get(this.keyOf(one)))
        if (v !== undefined) this.seen.add(v)
        this.reads += 2
      } catch (err) {
        this.failed.push(errorMessage(err))
        this.reads++
      }
    }
  }
}
