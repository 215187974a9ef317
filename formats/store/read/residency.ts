import { closeSync, openSync, readSync } from 'node:fs'
import { coldIoFor, UringFiles, type ColdIo } from './cold-io'
import type { ResidencyStats } from './residency-stats'
import type { StoreOps } from './store-ops'

export { mergeResidency, type ResidencyStats } from './residency-stats'

/** How a reader treats records whose pages are not in memory (OpenOptions.coldReads). */
export const COLD_READ_MODES = ['pool', 'sync'] as const
export type ColdReadMode = (typeof COLD_READ_MODES)[number]

/** Default period of the residency refresh (OpenOptions.residencyRefreshMs). */
export const DEFAULT_RESIDENCY_REFRESH_MS = 1000
/** The most of its time a serving process spends refreshing its map (a pool thread's). */
const REFRESH_SHARE = 0.02

/** Bytes per byte of a residency vector: the smallest page size rostore runs on (see track()). */
const PAGE = 4096

/** Records warmed by one pool job at most (a larger batch is sent in several). */
const MAX_WARM_BATCH = 256

interface WarmBatch {
  /** (file, offset, length) per record. */
  readonly ranges: number[]
  readonly waiters: { resolve: () => void; reject: (err: unknown) => void }[]
  sent: boolean
}

/** One data file as the map tracks it. */
interface TrackedFile {
  readonly windows: readonly ArrayBufferLike[]
  readonly vec: Uint8Array
}

/**
 * Which pages of a reader's data files are in memory, as its lookups see it: one byte per
 * page that the lookups read in place of asking the kernel, so a hot lookup makes no
 * system call. A lookup that finds a page of its record unmarked answers "cold" without
 * touching it, and the caller brings the record in with warm(), through the addon's
 * io_uring or on the libuv pool (cold-io.ts), so no device read blocks an event loop; the
 * warm-up marks the pages.
 * The kernel evicts pages without telling anyone, so a timer refreshes the map with
 * mincore (on the pool); between refreshes a page evicted after it was marked is read by
 * the lookup itself, one page (the mappings are MADV_RANDOM). docs/SERVING.md, "Stores
 * larger than memory".
 */
export class ResidencyMap {
  private readonly files: TrackedFile[] = []
  /** The files as warmRecords takes them. */
  private pairs: (readonly [readonly ArrayBufferLike[], Uint8Array])[] = []
  /** Warm-ups asked for in this turn of the event loop, sent at its end. */
  private batch: WarmBatch | undefined
  private timer: NodeJS.Timeout | undefined
  private closed = false
  private refreshing = false
  private resident = 0
  private pageCount = 0
  reads = 0
  coldReads = 0
  private inFlight = 0
  private pagesRead = 0
  private indexLockError = ''
  private indexLocked = false
  private lastRefreshMs = 0
  readonly io: ColdIo
  private readonly uring: UringFiles | undefined

  constructor(
    private readonly ops: StoreOps,
    private readonly refreshMs: number,
  ) {
    this.io = coldIoFor(ops)
    const { openRandom, readRecords } = ops
    this.uring = this.io === 'uring' && openRandom && readRecords ? new UringFiles({ openRandom, readRecords }) : undefined
  }

  /**
   * A vector for one more data file (one byte per 4 KiB: on systems with larger pages the
   * addon indexes it by the real page size and uses a prefix), refreshed with the others.
   */
  track(windows: readonly ArrayBufferLike[], size: number, path: string): Uint8Array {
    const vec = new Uint8Array(Math.ceil(size / PAGE))
    this.uring?.add(path, vec, size)
    this.files.push({ windows, vec })
    this.pairs.push([windows, vec])
    this.pageCount += vec.length
    return vec
  }

  /** Data files tracked so far (the last one's index is fileCount - 1). */
  get fileCount(): number {
    return this.files.length
  }

  /** The index files' lock result: 0, or the errno the kernel refused it with. */
  noteIndexLock(errno: number): void {
    if (errno === 0) {
      if (this.indexLockError === '') this.indexLocked = true
      return
    }
    this.indexLocked = false
    this.indexLockError = `mlock refused (errno ${errno}): the index can be evicted under memory pressure`
  }

  /** Fills every vector from the kernel once, then every refreshMs (0: never again). */
  async start(): Promise<void> {
    await this.refresh()
    if (this.refreshMs > 0) this.schedule()
  }

  /**
   * Brings one record into memory and marks its pages; resolves then. `length` 0: its
   * header was not read, the warm-up reads the length there. The records asked for
   * together go as one batch, their device reads in flight at once: one io_uring_enter
   * (ops.readRecords, completions on this loop), or one pool job (ops.warmRecords: one
   * process_madvise, then MADV_POPULATE_READ of each). One round of device latency per
   * batch, not one per record (bench/RESULTS.md, section 4g). Together: in one synchronous run when no warm-up is in flight,
   * else in one turn of the event loop. `lookup` false: a read of the reader's own (at open),
   * not counted as a cold lookup.
   */
  warm(file: number, offset: number, length: number, lookup = true): Promise<void> {
    if (!this.files[file]) return Promise.resolve()
    if (lookup) this.coldReads++
    const idle = this.inFlight === 0
    this.inFlight++
    return new Promise((resolve, reject) => {
      let b = this.batch
      if (!b) {
        const fresh: WarmBatch = { ranges: [], waiters: [], sent: false }
        this.batch = b = fresh
        // Idle: no reason to wait (a lone reader's next read waits on this one); the
        // records of the call that asked (a multi-get, a connection's commands) still go
        // together. Busy: the rest of this turn's cold records join the batch.
        if (idle) queueMicrotask(() => this.send(fresh))
        else setImmediate(() => this.send(fresh))
      }
      b.ranges.push(file, offset, length)
      b.waiters.push({ resolve, reject })
      if (b.waiters.length >= MAX_WARM_BATCH) this.send(b)
    })
  }

  /** A cold record read with pread (cold-pread.ts) instead of warm(): counted as a warm-up is. */
  readStarted(): void {
    this.coldReads++
    this.inFlight++
  }

  /** That read is done: `length` bytes at `offset` of data file `file` are in the page cache now. */
  readDone(file: number, offset: number, length: number): void {
    this.inFlight--
    const f = this.files[file]
    // The vectors are indexed by the kernel's page: marked from here only where it is PAGE.
    if (f && length > 0 && kernelPageBytes() === PAGE) {
      const last = Math.min(Math.floor((offset + length - 1) / PAGE), f.vec.length - 1)
      for (let p = Math.floor(offset / PAGE); p <= last; p++) {
        if (((f.vec[p] as number) & 1) === 0) this.pagesRead++
        f.vec[p] = 1
      }
    }
    this.closeIfIdle()
  }

  private send(b: WarmBatch): void {
    if (this.batch === b) this.batch = undefined
    if (b.sent) return
    b.sent = true
    const n = b.waiters.length
    const settle = (err: unknown): void => {
      this.inFlight -= n
      this.closeIfIdle()
      for (const w of b.waiters) {
        if (err === undefined) w.resolve()
        else w.reject(err)
      }
    }
    let job: Promise<number>
    try {
      // A file the ring cannot open is warmed on the pool, as without a ring.
      job = this.uring?.open(b.ranges) ? this.uring.read(b.ranges, n) : this.ops.warmRecords(this.pairs, Float64Array.from(b.ranges), n)
    } catch (err) {
      // A refused call (no files left to read) is a failed warm-up, never a throw out of a timer.
      settle(err)
      return
    }
    job.then(
      (fresh) => {
        this.pagesRead += fresh
        settle(undefined)
      },
      (err: unknown) => settle(err ?? new Error('warm-up failed')),
    )
  }

  stats(): ResidencyStats {
    return {
      pages: this.pageCount,
      residentPages: this.resident,
      reads: this.reads,
      coldReads: this.coldReads,
      coldInFlight: this.inFlight,
      pagesRead: this.pagesRead,
      indexLocked: this.indexLocked,
      indexLockError: this.indexLockError,
      io: this.io,
    }
  }

  /**
   * Stops the refresh and drops the map's references to the windows, so a closed reader's
   * mappings can be unmapped; warm-ups already started hold their own.
   */
  close(): void {
    this.closed = true
    this.closeIfIdle()
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
  }

  /** Once closed and with no warm-up in flight, the windows are let go (the mappings can go). */
  private closeIfIdle(): void {
    if (!this.closed || this.inFlight > 0) return
    this.files.length = 0
    this.pairs = []
    this.uring?.close()
  }

  /**
   * The next refresh after refreshMs, or later for large stores: mincore's cost grows with
   * the pages mapped, so the period grows to keep a refresh under REFRESH_SHARE of the time.
   */
  private schedule(): void {
    if (this.closed) return
    this.timer = setTimeout(
      () => {
        this.timer = undefined
        const t0 = performance.now()
        void this.refresh().finally(() => {
          this.lastRefreshMs = performance.now() - t0
          this.schedule()
        })
      },
      Math.max(this.refreshMs, this.lastRefreshMs / REFRESH_SHARE),
    )
    this.timer.unref()
  }

  /** A refresh now, outside the timer's period (resolves at once when one is running). */
  refreshNow(): Promise<void> {
    return this.refresh()
  }

  /** One file after the other, so a refresh holds one pool thread at a time. */
  private async refresh(): Promise<void> {
    if (this.refreshing || this.closed) return
    this.refreshing = true
    try {
      let resident = 0
      for (const f of this.files) {
        if (this.closed) return
        resident += await this.ops.refreshResidency(f.windows, f.vec).catch(() => 0)
      }
      this.resident = resident
    } finally {
      this.refreshing = false
    }
  }
}

let pageBytes: number | undefined

/** The kernel's page size (from /proc/self/smaps), or 0 when it cannot be read. */
function kernelPageBytes(): number {
  if (pageBytes === undefined) {
    try {
      const fd = openSync('/proc/self/smaps', 'r')
      const head = Buffer.alloc(4096)
      const n = readSync(fd, head, 0, head.length, null)
      closeSync(fd)
      const m = /KernelPageSize:\s+(\d+) kB/.exec(head.toString('latin1', 0, n))
      pageBytes = m ? Number(m[1]) * 1024 : 0
    } catch {
      pageBytes = 0
    }
  }
  return pageBytes
}
