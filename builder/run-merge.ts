import { closeSync, openSync } from 'node:fs'
import { StoreError } from '../common/errors'
import { readUpTo } from '../common/sync-io'
import { compareWithinBucket, decodeMapped, encodedSizeAt, type MappedRecord } from './mapped-record'
import type { RunSegment, SortedRun } from './sort-buffer'

/** One bucket's part of one sorted run. */
export interface SegmentRef {
  readonly run: SortedRun
  readonly segment: RunSegment
}

interface RecordSource {
  next(): MappedRecord | undefined
  close(): void
}

/** A segment of a memory run: records read in place from the shared arena. */
class MemorySegmentReader implements RecordSource {
  private readonly arena: Buffer
  private readonly order: Uint32Array
  private i: number

  constructor(
    run: Extract<SortedRun, { kind: 'memory' }>,
    private readonly segment: RunSegment,
  ) {
    this.arena = Buffer.from(run.arena)
    this.order = new Uint32Array(run.order)
    this.i = segment.start
  }

  next(): MappedRecord | undefined {
    if (this.i >= this.segment.end) return undefined
    return decodeMapped(this.arena, this.order[this.i++] as number)
  }

  close(): void {}
}

/** A segment of a run file, read sequentially through a buffer. */
class FileSegmentReader implements RecordSource {
  private buf: Buffer
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

  /** The next record, as views valid until the following call. */
  next(): MappedRecord | undefined {
    let size = encodedSizeAt(this.buf, this.start, this.end)
    if (size < 0 || this.end - this.start < size) {
      this.refill(size)
      size = encodedSizeAt(this.buf, this.start, this.end)
      if (size < 0) {
        if (this.end > this.start) this.truncated()
        return undefined
      }
      // The header came with this refill: a record bigger than the buffer needs another,
      // now that its size is known.
      if (this.end - this.start < size) this.refill(size)
      if (this.end - this.start < size) this.truncated()
    }
    const r = decodeMapped(this.buf, this.start)
    this.start += size
    return r
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
 * K-way merge of sorted segments of one bucket through a binary heap. Yields views: a
 * consumer that keeps a record past the next iteration must copy it.
 */
export function* mergeSegments(refs: readonly SegmentRef[], bufferBytes: number): Generator<MappedRecord> {
  const readers: RecordSource[] = refs.map((r) =>
    r.run.kind === 'memory' ? new MemorySegmentReader(r.run, r.segment) : new FileSegmentReader(r.run.path, r.segment, bufferBytes),
  )
  try {
    const heap: Entry[] = []
    for (const src of readers) {
      const r = src.next()
      if (r) heapPush(heap, { r, src })
    }
    while (heap.length > 0) {
      const top = heap[0] as Entry
      yield top.r
      const next = top.src.next()
      if (next) {
        top.r = next
        siftDown(heap, 0)
      } else {
        const last = heap.pop() as Entry
        if (heap.length > 0) {
          heap[0] = last
          siftDown(heap, 0)
        }
      }
    }
  } finally {
    for (const r of readers) r.close()
  }
}

type Entry = { r: MappedRecord; src: RecordSource }

function heapPush(heap: Entry[], e: Entry): void {
  heap.push(e)
  let i = heap.length - 1
  while (i > 0) {
    const parent = (i - 1) >> 1
    if (compareWithinBucket((heap[parent] as Entry).r, e.r) <= 0) break
    heap[i] = heap[parent] as Entry
    i = parent
  }
  heap[i] = e
}

function siftDown(heap: Entry[], i: number): void {
  const e = heap[i] as Entry
  for (;;) {
    let child = 2 * i + 1
    if (child >= heap.length) break
    const right = child + 1
    if (right < heap.length && compareWithinBucket((heap[right] as Entry).r, (heap[child] as Entry).r) < 0) child = right
    if (compareWithinBucket((heap[child] as Entry).r, e.r) >= 0) break
    heap[i] = heap[child] as Entry
    i = child
  }
  heap[i] = e
}
