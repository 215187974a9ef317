import type { LiveStore } from '../swapper/live-store'
import type { StaleMark } from '../swapper/stale-mark'

/**
 * What the read paths (HTTP reads, RESP) need of a store: its live reader (leased per
 * request), whether it is marked stale, and why its live version could not be opened.
 * In a single-process node these are the swapper's StoreVersions; in a serving worker
 * they are the worker's mirror of the supervisor's state.
 */
export interface ServedStore {
  readonly store: string
  readonly live: LiveStore
  readonly stale: StaleMark | undefined
  readonly loadError: string | undefined
}

export interface ServedStores {
  /** The store, or undefined when this node has none of that name. */
  get(store: string): ServedStore | undefined
  all(): readonly ServedStore[]
}
