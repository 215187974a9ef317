import { errorMessage } from '../../common/errors'
import { LocalServingStore } from '../../swapper/local-serving'
import type { OpenReader } from '../../swapper/open-version'
import type { ServedStore, ServedStores } from '../../swapper/served-store'
import type { Logger } from '../log'
import type { StoreSnapshot, WorkerCall } from './protocol'

/**
 * A serving worker's stores: one LocalServingStore per store (its own readers of the
 * shared, memory-mapped files), changed only by the supervisor's calls, in order.
 */
export class WorkerStores implements ServedStores {
  private readonly stores = new Map<string, LocalServingStore>()

  constructor(
    private readonly nodeId: number,
    private readonly openReader: OpenReader,
    private readonly log: Logger,
    /** Whether this worker carries the hot set to a prepared version: one does it for all (one page cache). */
    private readonly carriesHotSet = true,
  ) {}

  get(store: string): ServedStore | undefined {
    return this.stores.get(store)
  }

  all(): readonly ServedStore[] {
    return [...this.stores.values()].sort((a, b) => (a.store < b.store ? -1 : a.store > b.store ? 1 : 0))
  }

  /** Reproduce the supervisor's state; returns the stores whose live version could not be opened. */
  async load(snapshot: readonly StoreSnapshot[]): Promise<Record<string, string>> {
    const failed: Record<string, string> = {}
    for (const s of snapshot) {
      const st = this.store(s.store)
      await st.setStale(s.stale)
      await st.setLoadError(s.loadError)
      if (s.active) {
        try {
          await st.activate(s.active.version, s.active.dir)
        } catch (err) {
          failed[s.store] = errorMessage(err)
          await st.setLoadError(failed[s.store])
          this.log.error('open-live-failed', { store: s.store, version: s.active.version, error: failed[s.store] })
        }
      }
      for (const p of s.prepared) {
        await st.prepare(p.version, p.dir).catch((err: unknown) => {
          this.log.warn('prepare-failed', { store: s.store, version: p.version, error: errorMessage(err) })
        })
      }
    }
    return failed
  }

  /** Apply one call of the supervisor; the value is its answer. */
  async apply(call: Exclude<WorkerCall, { op: 'metrics' | 'shutdown' | 'tls' | 'nodes' }>): Promise<unknown> {
    // Waiting and counting never create a store; the changes do.
    if (
      call.op === 'drained' ||
      call.op === 'draining' ||
      call.op === 'accessMode' ||
      call.op === 'corruptReads' ||
      call.op === 'residency' ||
      call.op === 'discard' ||
      call.op === 'close'
    ) {
      const known = this.stores.get(call.store)
      if (!known) return call.op === 'draining' ? 0 : undefined
      if (call.op === 'close') {
        this.stores.delete(call.store)
        return known.close()
      }
    }
    const st = this.store(call.store)
    switch (call.op) {
      case 'attach':
        return undefined
      case 'prepare':
        return st.prepare(call.version, call.dir)
      case 'discard':
        return st.discard(call.version)
      case 'activate':
        try {
          await st.activate(call.version, call.dir)
        } catch (err) {
          // LIVE has flipped already: answer "unavailable" here until it can be opened.
          await st.setLoadError(errorMessage(err))
          this.log.error('activate-failed', { store: call.store, version: call.version, error: errorMessage(err) })
        }
        return undefined
      case 'stale':
        return st.setStale(call.mark ?? undefined)
      case 'loadError':
        return st.setLoadError(call.message ?? undefined)
      case 'drained':
        return st.drained(call.deadlineMs)
      case 'draining':
        return st.draining()
      case 'accessMode':
        return st.accessMode()
      case 'corruptReads':
        return st.corruptReads()
      case 'residency':
        return st.residency()
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.stores.values()].map((s) => s.close()))
  }

  private store(name: string): LocalServingStore {
    let st = this.stores.get(name)
    if (!st) {
      st = new LocalServingStore({
        store: name,
        nodeId: this.nodeId,
        openReader: this.openReader,
        log: this.log,
        carryHotSet: this.carriesHotSet,
      })
      this.stores.set(name, st)
    }
    return st
  }
}
