import type { LiveStore } from './live-store'
import type { StaleMark } from './disk/stale-mark'

/**
 * What the read paths (HTTP reads, RESP) need of a store: its live reader (leased per
 * request), whether it is marked stale, and why its live version could not be opened.
 */
export interface ServedStore {
  readonly store: string
  readonly live: LiveStore
  readonly stale: StaleMark | undefined
  readonly loadError: string | undefined
  /** A read of `version` failed with `err`: counted for /status when it says the files are damaged. */
  noteReadFault(version: number, err: unknown): void
}

export interface ServedStores {
  /** The store, or undefined when this node has none of that name. Synchronous: request path. */
  get(store: string): ServedStore | undefined
  all(): readonly ServedStore[]
}
