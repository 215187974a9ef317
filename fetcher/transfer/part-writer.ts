import type { FileHandle } from 'node:fs/promises'
import { nativeFunctions } from '../../common/native'
// Written windows: their writeback starts when full; one window later they leave the cache.
import { CACHE_DROP_WINDOW } from '../../common/read-behind'

/**
 * Positional writer for a `.part` file that gathers the small buffers a socket delivers
 * (often 16–64 KiB) into one `writev` per `batchBytes`: each write is a thread-pool round
 * trip, and at hundreds of MB/s those round trips, not the disk, set the pace.
 * Buffers are kept, not copied, until flushed; the caller must not reuse them.
 *
 * With `dropBehind` (and the addon), what it wrote leaves the page cache a window later
 * (native/io/drop-behind.c): a fetch as large as the live version must not evict the live
 * version's hot pages. Without the addon the written pages stay cached until the kernel
 * reclaims them.
 */
export class PartWriter {
  private pending: Buffer[] = []
  private pendingBytes = 0
  /** Start of the window whose writeback is not started yet; the one before it is in flight. */
  private windowStart: number
  private inFlight: number | undefined
  private readonly behind: ((fd: number, so: number, sl: number, d: number, dl: number) => Promise<number>) | undefined

  constructor(
    private readonly fh: FileHandle,
    private position: number,
    opts: { readonly batchBytes?: number; readonly dropBehind?: boolean } = {},
  ) {
    this.batchBytes = opts.batchBytes ?? 1 << 20
    this.windowStart = position - (position % CACHE_DROP_WINDOW)
    this.behind = opts.dropBehind === true ? nativeFunctions()?.writeBehind : undefined
  }

  private readonly batchBytes: number

  async write(buf: Buffer): Promise<void> {
    if (buf.length === 0) return
    this.pending.push(buf)
    this.pendingBytes += buf.length
    if (this.pendingBytes >= this.batchBytes) await this.flush()
  }

  async flush(): Promise<void> {
    let bufs = this.pending
    this.pending = []
    this.pendingBytes = 0
    while (bufs.length > 0) {
      const { bytesWritten } = await this.fh.writev(bufs, this.position)
      this.position += bytesWritten
      // Short writes are rare on regular files but legal: drop what went, retry the rest.
      let left = bytesWritten
      while (left > 0 && bufs.length > 0) {
        const first = bufs[0] as Buffer
        if (first.length <= left) {
          left -= first.length
          bufs = bufs.slice(1)
        } else {
          bufs = [first.subarray(left), ...bufs.slice(1)]
          left = 0
        }
      }
      if (bytesWritten === 0) throw new Error('write made no progress')
    }
    await this.behindWindows()
  }

  /** Every full window written: start its writeback, wait for the one before and drop it. */
  private async behindWindows(): Promise<void> {
    const behind = this.behind
    if (!behind) return
    while (this.position - this.windowStart >= CACHE_DROP_WINDOW) {
      const start = this.windowStart
      const prev = this.inFlight
      // Only advice: a failure leaves the pages cached, the data written all the same.
      await behind(this.fh.fd, start, CACHE_DROP_WINDOW, prev ?? 0, prev === undefined ? 0 : CACHE_DROP_WINDOW)
      this.inFlight = start
      this.windowStart = start + CACHE_DROP_WINDOW
    }
  }

  /** After the file's fsync: drops whatever of it is still cached (every page is clean by then). */
  dropAll(): void {
    // Length 0: to the end of the file, its last partial page included.
    if (this.behind) nativeFunctions()?.dropRange(this.fh.fd, 0, 0)
  }
}
