import { closeSync, openSync } from 'node:fs'
import { StoreError } from '../common/errors'
import { readUpTo } from '../common/sync-io'
import { encodedSizeAt } from './mapped-record'
import { compareMappedAt, type MappedStream } from './mapped-stream'
import type { RunSegment, SortedRun } from './sort-buffer'

/** One bucket's part of one sorted run. */
export interface SegmentRef {
  readonly run: SortedRun
  readonly segment: RunSegment
}

/** A segment of a memory run: records read in place from the shared arena. */
class MemorySegmentReader implements MappedStream {
  readonly buf: Buffer
  at = 0
  private readonly order: Uint32Array
  private i: number

  constructor(
    run: Extract<SortedRun, { kind: 'memory' }>,
    private readonly segment: RunSegment,
  ) {
    this.buf = Buffer.from(run.arena)
    this.order = new Uint32Array(run.order)
    this.i = segment.start
  }

  next(): boolean {
    if (this.i >= this.segment.end) return false
    this.at = this.order[this.i++] as number
    return true
  }

  close(): void {}
}

/** A segment of a run file, read sequentially through a buffer. */
class FileSegmentReader implements MappedStream {
  buf: Buffer
  at = 0
  private start = 0
  private end = 0
  private filePos: number
  private readonly fd: number

  constructor(
    private readonly path: string,
    private readonly segment: RunSegment,
    bufferBytes: number,
  ) {
    this.fd = openSync(path, 'r')
    this.buf = Buffer.allocUnsafe(bufferBytes)
    this.filePos = segment.start
  }

  /** The next record, valid until the following call. */
  next(): boolean {
    let size = encodedSizeAt(this.buf, this.start, this.end)
    if (size < 0 || this.end - this.start < size) {
      this.refill(size)
      size = encodedSizeAt(this.buf, this.start, this.end)
      if (size < 0) {
        if (this.end > this.start) this.truncated()
        return false
      }
      // The header came with this refill: a record bigger than the buffer needs another,
      // now that its size is known.
      if (this.end - this.start < size) this.refill(size)
      if (this.end - this.start < size) this.truncated()
    }
    this.at = this.start
    this.start += size
    return true
  }

  close(): void {
    closeSync(this.fd)
  }

  private refill(needed: number): void {
    const keep = this.end - this.start
    if (needed > this.buf.length) {
      const bigger = Buffer.allocUnsafe(needed)
      this.buf.copy(bigger, 0, this.start, this.end)
      this.buf = bigger
    } else {
      this.buf.copy(this.buf, 0, this.start, this.end)
    }
    this.start = 0
    this.end = keep
    const want = Math.min(this.buf.length - keep, this.segment.end - this.filePos)
    if (want <= 0) return
    const got = readUpTo(this.fd, this.buf.subarray(keep, keep + want), this.filePos)
    this.filePos += got
    this.end += got
  }

  private truncated(): never {
    throw new StoreError('RO_IO', `${this.path}: sorted run ends inside a record`)
  }
}

/**
 * K-way merge of sorted segments of one bucket through a binary heap of streams, compared
 * in place. The current record is valid until the next call: a consumer that keeps one
 * past that must copy it (memory runs excepted: their arena does not move).
 */
export function mergeSegments(refs: readonly SegmentRef[], bufferBytes: number): MappedStream {
  const readers: MappedStream[] = refs.map((r) =>
    r.run.kind === 'memory' ? new MemorySegmentReader(r.run, r.segment) : new FileSegmentReader(r.run.path, r.segment, bufferBytes),
  )
  if (readers.length === 1) return readers[0] as MappedStream
  return new HeapMerge(readers)
}

class HeapMerge implements MappedStream {
  private readonly heap: MappedStream[] = []
  private started = false
  private top: MappedStream | undefined

  constructor(private readonly readers: readonly MappedStream[]) {}

  get buf(): Buffer {
    return (this.top as MappedStream).buf
  }

  get at(): number {
    return (this.top as MappedStream).at
  }

  next(): boolean {
    const heap = this.heap
    if (!this.started) {
      this.started = true
      for (const r of this.readers) if (r.next()) this.push(r)
    } else if (heap.length > 0) {
      // The stream on top gave the last record: advance it, or drop it when done.
      const top = heap[0] as MappedStream
      if (top.next()) this.siftDown(0)
      else {
        const last = heap.pop() as MappedStream
        if (heap.length > 0) {
          heap[0] = last
          this.siftDown(0)
        }
      }
    }
    this.top = heap[0]
    return this.top !== undefined
  }

  close(): void {
    for (const r of this.readers) r.close()
  }

  private push(e: MappedStream): void {
    const heap = this.heap
    heap.push(e)
    let i = heap.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      const p = heap[parent] as MappedStream
      if (compareMappedAt(p.buf, p.at, e.buf, e.at) <= 0) break
      heap[i] = p
      i = parent
    }
    heap[i] = e
  }

  private siftDown(i: number): void {
    const heap = this.heap
    const e = heap[i] as MappedStream
    for (;;) {
      let child = 2 * i + 1
      if (child >= heap.length) break
      const right = child + 1
      let c = heap[child] as MappedStream
      if (right < heap.length) {
        const r = heap[right] as MappedStream
        if (compareMappedAt(r.buf, r.at, c.buf, c.at) < 0) {
          child = right
          c = r
        }
      }
      if (compareMappedAt(c.buf, c.at, e.buf, e.at) >= 0) break
      heap[i] = c
      i = child
    }
    heap[i] = e
  }
}
