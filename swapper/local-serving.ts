import { errorMessage } from '../common/errors'
import { carryHotSet, hotSetPartsOf } from '../formats/store/read/hot-set'
import type { ResidencyStats, ServingReader } from '../formats/store/read/store-reader-api'
import { CorruptReadCounter, type CorruptReads } from './corrupt-reads'
import { silentLogger, type SwapLogger } from './events'
import { LiveStore } from './live-store'
import { closeQuietly, openVersionReader, type OpenReader } from './open-version'
import type { ServedStore, ServedStores } from './served-store'
import type { ServingMirror } from './serving-mirror'
import type { StaleMark } from './disk/stale-mark'

export interface LocalServingOptions {
  readonly store: string
  /** When set, versions built for another node are refused. */
  readonly nodeId?: number
  readonly openReader: OpenReader
  readonly log?: SwapLogger
  /**
   * Warm a prepared version with what the live one has in memory (default true). Serving
   * workers share one page cache: one of them does it.
   */
  readonly carryHotSet?: boolean
}

/**
 * The serving side of one store inside this process: the live reader (LiveStore), the
 * readers prepared ahead of a swap (the newest install's, and the replaced live one as the
 * rollback target), the stale mark and the load error. It is both
 * what the swapper drives (ServingMirror) and what the read paths read (ServedStore).
 */
export class LocalServingStore implements ServingMirror, ServedStore {
  readonly live: LiveStore
  /** Readers opened ahead of their swap, by version. */
  private readonly prepared = new Map<number, ServingReader>()
  private staleMark: StaleMark | undefined
  private loadErrorMessage: string | undefined
  private closed = false
  /** Stops a hot-set carry when the store closes. */
  private readonly closing = new AbortController()
  private readonly log: SwapLogger
  private readonly corrupt = new CorruptReadCounter()

  constructor(private readonly opts: LocalServingOptions) {
    this.log = opts.log ?? silentLogger
    this.live = new LiveStore(opts.store, {
      keepsReader: (reader) => this.keeps(reader),
      onReaderClosed: (version, err) => {
        if (err !== undefined) this.log.warn('reader-close-failed', { store: opts.store, version, error: errorMessage(err) })
      },
      onRevoked: (version, requests) => this.log.warn('drain-deadline', { store: opts.store, version, requestsCut: requests }),
    })
  }

  get store(): string {
    return this.opts.store
  }

  get stale(): StaleMark | undefined {
    return this.staleMark
  }

  get loadError(): string | undefined {
    return this.loadErrorMessage
  }

  get activeVersion(): number | undefined {
    return this.live.version
  }

  /** Versions prepared and not yet activated or discarded. */
  get preparedVersions(): number[] {
    return [...this.prepared.keys()]
  }

  attach(): Promise<void> {
    return Promise.resolve()
  }

  async prepare(version: number, dir: string): Promise<void> {
    if (this.prepared.has(version) || this.live.version === version) return
    const reader = await this.open(version, dir)
    if (this.closed || this.prepared.has(version) || this.live.version === version) {
      closeQuietly(reader)
      return
    }
    this.prepared.set(version, reader)
    await this.carryHotSet(reader)
  }

  /**
   * Warms in a prepared version what the live one has in memory (formats/store/read/hot-set.ts),
   * so the swap to it does not turn every hot read into a cold one. Best effort: a failure
   * is logged, the version is prepared all the same.
   */
  private async carryHotSet(next: ServingReader): Promise<void> {
    if (this.opts.carryHotSet === false) return
    const lease = this.live.acquire()
    if (!lease) return
    try {
      const from = hotSetPartsOf(lease.reader)
      const to = hotSetPartsOf(next)
      if (!from || !to) return
      const report = await carryHotSet(from, to, { signal: this.closing.signal })
      this.log.info('hot-set-carried', { store: this.opts.store, version: next.metadata.version, ...report, ms: Math.round(report.ms) })
    } catch (err) {
      this.log.warn('hot-set-carry-failed', { store: this.opts.store, version: next.metadata.version, error: errorMessage(err) })
    } finally {
      lease.release()
    }
  }

  discard(version: number): Promise<void> {
    const reader = this.prepared.get(version)
    this.prepared.delete(version)
    // One still serving in-flight requests closes when they are done (LiveStore).
    if (reader && !this.live.holds(reader)) closeQuietly(reader)
    return Promise.resolve()
  }

  /**
   * The replaced reader stays open, prepared, as the rollback target: a rollback (or a
   * swap back) then serves mappings whose pages are already mapped, instead of opening
   * the version again and taking a page fault on every first read of a page. The swapper
   * discards it like any prepared version (a newer install, retention, close).
   */
  async activate(version: number, dir: string): Promise<void> {
    if (this.live.version === version) return
    const reader = this.prepared.get(version) ?? (await this.open(version, dir))
    this.prepared.delete(version)
    this.loadErrorMessage = undefined
    const previous = this.live.currentReader
    if (previous !== undefined && !this.closed) this.prepared.set(previous.metadata.version, previous)
    void this.live.replace(reader)
    // The reader's residency view dates from its open. Since then the fetch's drop-behind,
    // and one worker's hot-set carry, changed what is in memory: until the next periodic
    // refresh (seconds apart on a large store) this worker would take the carried hot set
    // for cold and send each first read through the cold path. Refreshed now, after the
    // replace, so the swap itself does not wait for mincore.
    void hotSetPartsOf(reader)?.map.refreshNow()
  }

  setStale(mark: StaleMark | undefined): Promise<void> {
    this.staleMark = mark
    return Promise.resolve()
  }

  setLoadError(message: string | undefined): Promise<void> {
    this.loadErrorMessage = message
    return Promise.resolve()
  }

  drained(deadlineMs: number): Promise<void> {
    return this.live.drained(deadlineMs)
  }

  draining(): Promise<number> {
    return Promise.resolve(this.live.retiringCount)
  }

  noteReadFault(version: number, err: unknown): void {
    this.corrupt.note(version, err)
  }

  corruptReads(): Promise<CorruptReads | undefined> {
    return Promise.resolve(this.corrupt.get())
  }

  residency(): Promise<ResidencyStats | undefined> {
    const lease = this.live.acquire()
    if (!lease) return Promise.resolve(undefined)
    const stats = lease.reader.residency()
    lease.release()
    return Promise.resolve(stats)
  }

  accessMode(): Promise<string | undefined> {
    const lease = this.live.acquire()
    if (!lease) return Promise.resolve(undefined)
    const mode = lease.reader.accessMode
    lease.release()
    return Promise.resolve(mode)
  }

  async close(): Promise<void> {
    this.closed = true
    this.closing.abort()
    const prepared = [...this.prepared.values()]
    this.prepared.clear()
    for (const reader of prepared) if (!this.live.holds(reader)) closeQuietly(reader)
    await this.live.close()
  }

  private keeps(reader: ServingReader): boolean {
    return this.prepared.get(reader.metadata.version) === reader
  }

  private open(version: number, dir: string): Promise<ServingReader> {
    return openVersionReader(this.opts.openReader, dir, { store: this.opts.store, version, nodeId: this.opts.nodeId })
  }
}

/** The read side of a single-process node: every store's LocalServingStore. */
export function localServedStores(dataDir: {
  get(store: string): { readonly serving: LocalServingStore } | undefined
  all(): readonly { readonly serving: LocalServingStore }[]
}): ServedStores {
  return {
    get: (store) => dataDir.get(store)?.serving,
    all: () => dataDir.all().map((sv) => sv.serving),
  }
}
