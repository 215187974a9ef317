import type { ResidencyStats } from '../formats/store/read/store-reader-api'
import type { CorruptReads } from './corrupt-reads'
import type { StaleMark } from './disk/stale-mark'

/**
 * What the swapper tells the serving side of a node about one store, and waits for. In a
 * single-process node it is a LocalServingStore (the readers are in this process); in a
 * multi-process node the supervisor's mirror forwards every call to each serving worker
 * and resolves once all of them have applied it, so a swap is live on every event loop
 * before the admin call returns.
 */
export interface ServingMirror {
  /** The store exists on this node from now on (it may have no version yet). */
  attach(): Promise<void>
  /** The version the serving side was last told to serve (undefined: none). */
  readonly activeVersion: number | undefined
  /**
   * Open `version`'s reader ahead of its swap, so the swap itself is O(1); it stays
   * prepared until activated or discarded. Rejects when the version cannot be opened.
   */
  prepare(version: number, dir: string): Promise<void>
  /** Forget a prepared version (it is being deleted). */
  discard(version: number): Promise<void>
  /**
   * Serve `version` from now on: its prepared reader, or one opened now. Resolves when new
   * requests read it everywhere; in-flight requests finish on the reader they hold.
   */
  activate(version: number, dir: string): Promise<void>
  /** Reads answer "unavailable" while a store is marked stale. */
  setStale(mark: StaleMark | undefined): Promise<void>
  /** Why the live version could not be opened (reads answer "unavailable"), or undefined. */
  setLoadError(message: string | undefined): Promise<void>
  /**
   * Resolves when no request reads a replaced version any more. Requests still holding one
   * after `deadlineMs` are cut (their connections closed), so a client that stops reading
   * cannot keep old files on disk forever.
   */
  drained(deadlineMs: number): Promise<void>
  /** Replaced versions still read by in-flight requests, summed over every serving loop. */
  draining(): Promise<number>
  /**
   * How the live version's files are read ('mmap' or 'pread'; 'mixed' when serving loops
   * differ), or undefined when nothing is served.
   */
  accessMode(): Promise<string | undefined>
  /** Reads that found the files damaged, summed over every serving loop (undefined: none). */
  corruptReads(): Promise<CorruptReads | undefined>
  /** The live reader's residency counters, summed over every serving loop (undefined: no map). */
  residency(): Promise<ResidencyStats | undefined>
  /** Stop serving the store (node shutdown, or the store dropped); readers close once their requests are done. */
  close(): Promise<void>
}
