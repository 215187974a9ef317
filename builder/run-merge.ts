import { closeSync, openSync } from 'node:fs'
import { StoreError } from '../common/errors'
import { readUpTo } from '../common/sync-io'
import { compareWithinBucket, decodeMapped, encodedSizeAt, type MappedRecord } from './mapped-record'
import type { RunSegment } from './sort-buffer'

/** One bucket's part of one sorted run file, read sequentially through a buffer. */
export interface SegmentRef {
  readonly path: string
  readonly segment: RunSegment
}

class SegmentReader {
  private buf: Buffer
  private start = 0
  private end = 0
  private filePos: number
  private readonly fd: number

  constructor(private readonly ref: SegmentRef, bufferBytes: number) {
    this.fd = openSync(ref.path, 'r')
    this.buf = Buffer.allocUnsafe(bufferBytes)
    this.filePos = ref.segment.start
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
    const want = Math.min(this.buf.length - keep, this.ref.segment.end - this.filePos)
    if (want <= 0) return
    const got = readUpTo(this.fd, this.buf.subarray(keep, keep + want), this.filePos)
    this.filePos += got
    this.end += got
  }

  private truncated(): never {
    throw new StoreError('RO_IO', `${this.ref.path}: sorted run ends inside a record`)
  }
}

/**
 * K-way merge of sorted segments of one bucket through a binary heap. Yields views: a
 * consumer that keeps a record past the next iteration must copy it.
 */
export function* mergeSegments(refs: readonly SegmentRef[], bufferBytes: number): Generator<MappedRecord> {
  const readers = refs.map((r) => new SegmentReader(r, bufferBytes))
  try {
    const heap: { r: MappedRecord; src: SegmentReader }[] = []
    for (const src of readers) {
      const r = src.next()
      if (r) heapPush(heap, { r, src })
    }
    while (heap.length > 0) {
      const top = heap[0] as { r: MappedRecord; src: SegmentReader }
      yield top.r
      const next = top.src.next()
      if (next) {
        top.r = next
        siftDown(heap, 0)
      } else {
        const last = heap.pop() as { r: MappedRecord; src: SegmentReader }
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

type Entry = { r: MappedRecord; src: SegmentReader }

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
