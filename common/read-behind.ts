import { nativeFunctions } from './native'

/**
 * Dropped from the page cache in windows of this size, aligned to it. The kernel drops only
 * folios a range covers whole, and it caches a file read in sequence in large folios (up to
 * its read-ahead size, naturally aligned): a drop of each 1 MiB just read dropped nothing
 * on the benchmark VM (Linux 6.18, read_ahead_kb 8192); aligned 8 MiB windows drop them all.
 */
export const CACHE_DROP_WINDOW = 8 << 20

/**
 * A sequential read of a file read once (a fetch's source, a staged version's verify) that
 * leaves the page cache as it goes: whole windows a window behind the reader are dropped
 * (POSIX_FADV_DONTNEED through the addon, native/io/drop-behind.c), the rest at the end. The
 * pages are clean, so a drop costs no I/O. Without the addon it does nothing.
 */
export class ReadBehind {
  private dropped: number
  private readonly drop = nativeFunctions()?.dropRange

  constructor(
    private readonly fd: number,
    start = 0,
  ) {
    this.dropped = start - (start % CACHE_DROP_WINDOW)
  }

  /** The reader has read up to `pos`. */
  passed(pos: number): void {
    if (!this.drop) return
    const upTo = pos - (pos % CACHE_DROP_WINDOW) - CACHE_DROP_WINDOW
    if (upTo <= this.dropped) return
    this.drop(this.fd, this.dropped, upTo - this.dropped)
    this.dropped = upTo
  }

  /** Done reading (the fd still open): everything from the last window on, to the end of the file. */
  end(): void {
    if (this.drop && this.fd >= 0) this.drop(this.fd, this.dropped, 0)
  }
}
