import type { MappedChunk } from './mapped-chunk'
import type { ResidencyMap } from './residency'
import { HEADER_SIZE, INDEX_ENTRY_SIZE } from '../chunk/header'
import type { ChunkGeometry } from '../layout/partition-files'

/** What a reader shows of itself for carrying its hot set (MappedStoreReader.hotSetParts). */
export interface HotSetParts {
  readonly chunks: readonly MappedChunk[]
  readonly map: ResidencyMap
  /** Which chunk slot a hash prefix lives in (either format, partition-files.ts). */
  readonly geometry: ChunkGeometry
}

export interface HotSetOptions {
  /** Stops the carry (the version is discarded, the node shuts down). */
  readonly signal?: AbortSignal
  /** Records warmed together at most: the rest of the pool stays free for live cold reads. */
  readonly inFlight?: number
}

export interface HotSetReport {
  /** Records of the live version whose first page was in memory. */
  readonly hot: number
  /** Of those, records found in the next version and warmed there. */
  readonly warmed: number
  readonly ms: number
}

/** Index entries walked between two yields to the event loop (~1 ms of work). */
const SLICE = 1 << 15
const PAGE = 4096
const DEFAULT_IN_FLIGHT = 256

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** Reads the entries of one mapped index file, whatever its windows. */
class IndexView {
  private readonly views: DataView[]
  private readonly w: number

  constructor(windows: readonly ArrayBufferLike[]) {
    this.views = windows.map((b) => new DataView(b as ArrayBuffer))
    this.w = (windows[0] as ArrayBufferLike).byteLength
  }

  private u32(at: number, le: boolean): number {
    const k = Math.floor(at / this.w)
    return (this.views[k] as DataView).getUint32(at - k * this.w, le)
  }

  /** The two big-endian halves of entry i's hash prefix (entries never straddle a window: 16 | window size). */
  hi(i: number): number {
    return this.u32(HEADER_SIZE + INDEX_ENTRY_SIZE * i, false)
  }
  lo(i: number): number {
    return this.u32(HEADER_SIZE + INDEX_ENTRY_SIZE * i + 4, false)
  }
  offset(i: number): number {
    const at = HEADER_SIZE + INDEX_ENTRY_SIZE * i + 8
    return this.u32(at + 4, true) * 0x100000000 + this.u32(at, true)
  }
}

/** Hash prefixes gathered for one chunk of the next version: (lo, hi) pairs, so a BigUint64Array view sorts them. */
class PrefixList {
  private u32 = new Uint32Array(2048)
  n = 0

  push(hi: number, lo: number): void {
    if (2 * this.n + 2 > this.u32.length) {
      const grown = new Uint32Array(this.u32.length * 2)
      grown.set(this.u32)
      this.u32 = grown
    }
    this.u32[2 * this.n] = lo
    this.u32[2 * this.n + 1] = hi
    this.n++
  }

  /** Sorted by (hi, lo), as the index is: little-endian u64s with hi in the high half. */
  sorted(): Uint32Array {
    const words = this.u32.subarray(0, 2 * this.n)
    new BigUint64Array(words.buffer, words.byteOffset, this.n).sort()
    return words
  }
}

/**
 * Warms in `next` the records the page cache holds of `live`: a swap then starts with the
 * new version's copies of what readers were reading in memory, not with every read cold,
 * and without reading the rest of the version (the hot set is what the live version has
 * resident, as mincore says, not a guess). Records are matched by their hash prefix:
 * the live index is walked once, its entries whose record's first page is in memory are
 * grouped by their chunk in `next` and sorted, then merged with that chunk's index (both
 * are sorted by prefix). Runs on the event loop in slices, and warms `inFlight` records at
 * a time through the next version's residency map (the libuv pool), so live reads keep
 * their share of the loop and of the pool.
 */
export async function carryHotSet(live: HotSetParts, next: HotSetParts, opts: HotSetOptions = {}): Promise<HotSetReport> {
  const t0 = performance.now()
  const aborted = (): boolean => opts.signal?.aborted === true
  if (aborted()) return { hot: 0, warmed: 0, ms: 0 }
  await live.map.refreshNow()
  const nextChunks = next.chunks.length
  const slotOf = prefixSlot(next.geometry)
  const lists = Array.from({ length: nextChunks }, () => new PrefixList())
  let hot = 0
  let steps = 0
  for (const chunk of live.chunks) {
    const vec = chunk.resident
    if (!vec) continue
    const index = new IndexView(chunk.index)
    for (let i = 0; i < chunk.count; i++) {
      if (++steps % SLICE === 0) {
        await yieldToLoop()
        if (aborted()) return { hot, warmed: 0, ms: performance.now() - t0 }
      }
      if (((vec[Math.floor(index.offset(i) / PAGE)] as number) & 1) === 0) continue
      hot++
      const hi = index.hi(i)
      const lo = index.lo(i)
      // A record of a partition the next version does not hold here is not carried.
      const slot = slotOf(hi, lo)
      if (slot >= 0) (lists[slot] as PrefixList).push(hi, lo)
    }
  }

  const inFlight = opts.inFlight ?? DEFAULT_IN_FLIGHT
  let warmed = 0
  let wave: Promise<void>[] = []
  for (let c = 0; c < nextChunks; c++) {
    const list = lists[c] as PrefixList
    if (list.n === 0) continue
    const prefixes = list.sorted()
    const chunk = next.chunks[c] as MappedChunk
    const index = new IndexView(chunk.index)
    let j = 0
    for (let k = 0; k < list.n && !aborted(); k++) {
      const hi = prefixes[2 * k + 1] as number
      const lo = prefixes[2 * k] as number
      while (j < chunk.count) {
        const h = index.hi(j)
        if (h > hi || (h === hi && index.lo(j) >= lo)) break
        j++
        if (++steps % SLICE === 0) await yieldToLoop()
      }
      // Equal prefixes (a collision) are neighbours: warm them all.
      for (let e = j; e < chunk.count && index.hi(e) === hi && index.lo(e) === lo; e++) {
        // Length 0: the warm-up reads it from the record's header.
        wave.push(next.map.warm(c, index.offset(e), 0, false))
        warmed++
      }
      if (wave.length >= inFlight) {
        await Promise.all(wave)
        wave = []
      }
    }
  }
  await Promise.all(wave)
  return { hot, warmed, ms: performance.now() - t0 }
}

/** partition-files.ts chunkSlot over an index entry's prefix (u32be h[0..4], h[4..8]), which is all it reads. */
function prefixSlot(g: ChunkGeometry): (hi: number, lo: number) => number {
  const { chunks, slots, partitionCount } = g
  if (slots === undefined || partitionCount === undefined) return (_hi, lo) => lo % chunks
  return (hi, lo) => {
    const s = slots[hi % partitionCount] as number
    return s < 0 ? -1 : s * chunks + (lo % chunks)
  }
}

/** The parts of a reader that can carry or take a hot set: a mapped reader with a residency map. */
export function hotSetPartsOf(reader: object): HotSetParts | undefined {
  const r = reader as { hotSetParts?: () => HotSetParts | undefined }
  return typeof r.hotSetParts === 'function' ? r.hotSetParts() : undefined
}
