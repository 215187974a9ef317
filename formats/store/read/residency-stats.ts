import type { ColdIo } from './cold-io'

/** What a reader's residency map has seen, for /status and /metrics. */
export interface ResidencyStats {
  /** Pages of the data files, and how many the last refresh found in memory. */
  readonly pages: number
  readonly residentPages: number
  /** Lookups that asked the map, and those that found their record cold and read it off the event loop. */
  readonly reads: number
  readonly coldReads: number
  /** Cold reads started and not finished yet. */
  readonly coldInFlight: number
  /** Pages the cold reads brought in (device reads: each was not in memory when asked). */
  readonly pagesRead: number
  /** Whether the index files are locked in memory (mlock), and why not when they are not. */
  readonly indexLocked: boolean
  readonly indexLockError: string
  /** How cold records are read: the addon's io_uring, or the libuv pool (cold-io.ts). */
  readonly io: ColdIo
}

/**
 * The counters of several serving loops over the same files: reads and cold reads add up;
 * pages and resident pages are the same files' (one page cache), so the largest is kept.
 */
export function mergeResidency(parts: readonly (ResidencyStats | undefined)[]): ResidencyStats | undefined {
  const known = parts.filter((p): p is ResidencyStats => p !== undefined)
  if (known.length === 0) return undefined
  return {
    pages: Math.max(...known.map((p) => p.pages)),
    residentPages: Math.max(...known.map((p) => p.residentPages)),
    reads: known.reduce((n, p) => n + p.reads, 0),
    coldReads: known.reduce((n, p) => n + p.coldReads, 0),
    coldInFlight: known.reduce((n, p) => n + p.coldInFlight, 0),
    pagesRead: known.reduce((n, p) => n + p.pagesRead, 0),
    indexLocked: known.every((p) => p.indexLocked),
    indexLockError: known.find((p) => p.indexLockError !== '')?.indexLockError ?? '',
    io: known.every((p) => p.io === 'uring') ? 'uring' : 'pool',
  }
}
