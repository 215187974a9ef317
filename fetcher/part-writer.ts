import type { FileHandle } from 'node:fs/promises'

/**
 * Positional writer for a `.part` file that gathers the small buffers a socket delivers
 * (often 16–64 KiB) into one `writev` per `batchBytes`: each write is a thread-pool round
 * trip, and at hundreds of MB/s those round trips, not the disk, set the pace.
 * Buffers are kept, not copied, until flushed; the caller must not reuse them.
 */
export class PartWriter {
  private pending: Buffer[] = []
  private pendingBytes = 0

  constructor(
    private readonly fh: FileHandle,
    private position: number,
    private readonly batchBytes = 1 << 20,
  ) {}

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
  }
}
