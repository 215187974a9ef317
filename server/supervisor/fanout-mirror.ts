import { mergeResidency, type ResidencyStats } from '../../formats/store/read/residency'
import { mergeCorruptReads, type CorruptReads } from '../../swapper/corrupt-reads'
import { closeQuietly, openVersionReader, type OpenReader } from '../../swapper/open-version'
import type { ServingMirror } from '../../swapper/serving-mirror'
import type { StaleMark } from '../../swapper/disk/stale-mark'
import type { StoreSnapshot } from './protocol'
import type { WorkerPool } from './worker-pool'

/**
 * The supervisor's side of one store in a multi-process node: it keeps the serving state
 * (active and prepared versions, stale mark, load error) that a starting worker must
 * reproduce, and applies every change on all workers before it resolves. State is updated
 * before the call goes out, so a worker forked in between starts from the new state.
 */
export class FanoutMirror implements ServingMirror {
  private active: { version: number; dir: string } | undefined
  private readonly prepared = new Map<number, string>()
  private staleMark: StaleMark | undefined
  private loadError: string | undefined

  constructor(
    readonly store: string,
    private readonly pool: () => WorkerPool | undefined,
    /** Opens a reader here to check a version no worker has opened yet (the live one at startup). */
    private readonly check: { readonly openReader: OpenReader; readonly nodeId?: number },
  ) {}

  attach(): Promise<void> {
    return this.call({ op: 'attach', store: this.store }).then(() => undefined)
  }

  get activeVersion(): number | undefined {
    return this.active?.version
  }

  snapshot(): StoreSnapshot {
    return {
      store: this.store,
      ...(this.active ? { active: this.active } : {}),
      prepared: [...this.prepared].map(([version, dir]) => ({ version, dir })),
      ...(this.staleMark ? { stale: this.staleMark } : {}),
      ...(this.loadError ? { loadError: this.loadError } : {}),
    }
  }

  async prepare(version: number, dir: string): Promise<void> {
    if (this.prepared.has(version) || this.active?.version === version) return
    this.prepared.set(version, dir)
    try {
      await this.call({ op: 'prepare', store: this.store, version, dir })
    } catch (err) {
      this.prepared.delete(version)
      await this.call({ op: 'discard', store: this.store, version }).catch(() => undefined)
      throw err
    }
  }

  async discard(version: number): Promise<void> {
    this.prepared.delete(version)
    await this.call({ op: 'discard', store: this.store, version })
  }

  async activate(version: number, dir: string): Promise<void> {
    // Prepared versions were opened by every worker; any other (the live version when the
    // node starts, before there are workers) is opened here once, so a version that cannot
    // be served is refused (and reported in /status) rather than failing in every worker.
    if (!this.prepared.has(version) && this.active?.version !== version) {
      closeQuietly(await openVersionReader(this.check.openReader, dir, { store: this.store, version, nodeId: this.check.nodeId }))
    }
    // Workers keep the replaced reader prepared as the rollback target
    // (LocalServingStore.activate): mirrored here, so swapping back asks them nothing more.
    if (this.active !== undefined && this.active.version !== version) this.prepared.set(this.active.version, this.active.dir)
    this.active = { version, dir }
    this.prepared.delete(version)
    this.loadError = undefined
    await this.call({ op: 'activate', store: this.store, version, dir })
  }

  async setStale(mark: StaleMark | undefined): Promise<void> {
    this.staleMark = mark
    await this.call({ op: 'stale', store: this.store, mark: mark ?? null })
  }

  async setLoadError(message: string | undefined): Promise<void> {
    this.loadError = message
    if (message !== undefined) this.active = undefined
    await this.call({ op: 'loadError', store: this.store, message: message ?? null })
  }

  async drained(deadlineMs: number): Promise<void> {
    await this.call({ op: 'drained', store: this.store, deadlineMs })
  }

  async draining(): Promise<number> {
    const counts = await this.call({ op: 'draining', store: this.store })
    return counts.reduce<number>((n, c) => n + (typeof c === 'number' ? c : 0), 0)
  }

  async accessMode(): Promise<string | undefined> {
    const modes = new Set((await this.call({ op: 'accessMode', store: this.store })).filter((m): m is string => typeof m === 'string'))
    return modes.size === 0 ? undefined : modes.size === 1 ? [...modes][0] : 'mixed'
  }

  async residency(): Promise<ResidencyStats | undefined> {
    return mergeResidency((await this.call({ op: 'residency', store: this.store })) as (ResidencyStats | undefined)[])
  }

  async corruptReads(): Promise<CorruptReads | undefined> {
    return mergeCorruptReads((await this.call({ op: 'corruptReads', store: this.store })) as (CorruptReads | undefined)[])
  }

  /** The store is gone (dropped, or the node stops): workers forget it. */
  async close(): Promise<void> {
    await this.call({ op: 'close', store: this.store })
  }

  private call(call: Parameters<WorkerPool['call']>[0]): Promise<unknown[]> {
    return this.pool()?.call(call) ?? Promise.resolve([])
  }
}
