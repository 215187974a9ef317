import { closeSync, fsyncSync, openSync } from 'node:fs'
import type { IHasher } from 'hash-wasm'
import { nativeFunctions } from '../../../common/native'
import { CACHE_DROP_WINDOW } from '../../../common/read-behind'
import { writeAll } from '../../../common/sync-io'
import { readFully } from '../chunk/chunk-reader'
import { INDEX_ENTRY_SIZE } from '../chunk/header'

/** Bytes gathered per write(2); a multiple of INDEX_ENTRY_SIZE, so index entries never straddle two writes. */
const OUTPUT_BUFFER_BYTES = 4 << 20

/**
 * Buffers of closed outputs, for the next ones: a fresh buffer costs a page fault per 4 KiB
 * on its first touch, as much as the copies through it on this kind of VM.
 */
const spare: Buffer[] = []
const MAX_SPARE = 4

export interface OutputDone {
  readonly size: number
  /** The XXH64 of every byte written, as checksumFile gives it. */
  readonly checksum: string
}

/**
 * A file written front to back (its header first: the rebuild knows it from the manifest)
 * through one large buffer, checksummed as it is written: the rebuilt files are never read
 * back to be checked. With `dropBehind` (and the addon) what was written leaves the page
 * cache a window later, as a fetched file's does (fetcher/transfer/part-writer.ts): a
 * rebuild as large as the live version must not evict its hot pages.
 */
export class HashedOutput {
  private readonly fd: number
  private readonly buf = spare.pop() ?? Buffer.allocUnsafeSlow(OUTPUT_BUFFER_BYTES)
  private used = 0
  private pos = 0
  private windowStart = 0
  private inFlight: number | undefined
  private readonly behind: ((fd: number, so: number, sl: number, d: number, dl: number) => Promise<number>) | undefined
  private closed = false

  constructor(
    readonly path: string,
    private readonly hasher: IHasher,
    dropBehind: boolean,
  ) {
    this.fd = openSync(path, 'w')
    this.behind = dropBehind ? nativeFunctions()?.writeBehind : undefined
    hasher.init()
  }

  /** Bytes written so far (buffered included). */
  get size(): number {
    return this.pos + this.used
  }

  async append(src: Uint8Array): Promise<void> {
    for (let at = 0; at < src.length;) {
      if (this.used === this.buf.length) await this.flush()
      const n = Math.min(this.buf.length - this.used, src.length - at)
      this.buf.set(src.subarray(at, at + n), this.used)
      this.used += n
      at += n
    }
  }

  /** Copies `length` bytes of `fd` from `from` (a run of unchanged base records): read straight into the buffer. */
  async appendFromFile(fd: number, from: number, length: number, file: string): Promise<void> {
    while (length > 0) {
      if (this.used === this.buf.length) await this.flush()
      const n = Math.min(this.buf.length - this.used, length)
      readFully(fd, this.buf.subarray(this.used, this.used + n), from, file)
      this.used += n
      from += n
      length -= n
    }
  }

  /**
   * Copies index entries src[from, to) (16 bytes each: hash prefix, u64 LE offset), adding
   * `delta` to every offset: the records they point to moved by what the patch inserted
   * and removed before them.
   */
  async appendEntries(src: Buffer, from: number, to: number, delta: number): Promise<void> {
    while (from < to) {
      if (this.buf.length - this.used < INDEX_ENTRY_SIZE) await this.flush()
      const k = Math.min(Math.floor((this.buf.length - this.used) / INDEX_ENTRY_SIZE), to - from)
      const start = this.used
      src.copy(this.buf, start, from * INDEX_ENTRY_SIZE, (from + k) * INDEX_ENTRY_SIZE)
      if (delta !== 0) shiftOffsets(this.buf, start, k, delta)
      this.used += k * INDEX_ENTRY_SIZE
      from += k
    }
  }

  /** Flushes, fsyncs and closes; what is still cached leaves the page cache (it is clean by then). */
  async finish(): Promise<OutputDone> {
    await this.flush()
    fsyncSync(this.fd)
    if (this.behind) nativeFunctions()?.dropRange(this.fd, 0, 0)
    this.close()
    return { size: this.pos, checksum: this.hasher.digest('hex') }
  }

  /** Closes without finishing, after a failure; the caller removes the file. */
  close(): void {
    if (this.closed) return
    this.closed = true
    if (spare.length < MAX_SPARE) spare.push(this.buf)
    closeSync(this.fd)
  }

  private async flush(): Promise<void> {
    if (this.used === 0) return
    const part = this.buf.subarray(0, this.used)
    this.hasher.update(part)
    writeAll(this.fd, part, this.pos)
    this.pos += this.used
    this.used = 0
    const behind = this.behind
    if (!behind) return
    // Every full window written: start its writeback, wait for the one before and drop it.
    while (this.pos - this.windowStart >= CACHE_DROP_WINDOW) {
      const prev = this.inFlight
      // Only advice: a failure leaves the pages cached, the data written all the same.
      await behind(this.fd, this.windowStart, CACHE_DROP_WINDOW, prev ?? 0, prev === undefined ? 0 : CACHE_DROP_WINDOW)
      this.inFlight = this.windowStart
      this.windowStart += CACHE_DROP_WINDOW
    }
  }
}

/** Adds `delta` to the u64 LE offsets of `count` index entries of `b` from byte `at`. */
function shiftOffsets(b: Buffer, at: number, count: number, delta: number): void {
  for (let e = at + 8, end = at + count * INDEX_ENTRY_SIZE; e < end; e += INDEX_ENTRY_SIZE) {
    const v = b.readUInt32LE(e + 4) * 0x100000000 + b.readUInt32LE(e) + delta
    b.writeUInt32LE(v % 0x100000000, e)
    b.writeUInt32LE(Math.floor(v / 0x100000000), e + 4)
  }
}
