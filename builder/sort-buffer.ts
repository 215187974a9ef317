import { closeSync, openSync } from 'node:fs'
import { readU32BE as readU32, writeU32BE } from '../common/bytes'
import { writeAll } from '../common/sync-io'
import { StoreError } from '../common/errors'
import { nativeFunctions, type NativeFunctions } from '../common/native'
import { workingMemory } from '../common/working-memory'
import type { RecordBatch } from '../formats/input/record-batch'
import { MAPPED_HEADER_SIZE, encodeMapped, mappedSize, type MappedRecord } from './mapped-record'
import { RadixSorter, sortTies } from './radix-sort'
import type { StageTimes } from './stage-times'

/**
 * The mapper's memory: mapped records appended to one arena buffer, sorted by
 * (bucket, hash, key, input position) and written out as a sorted run when full.
 * Positions are sorted by a radix sort over three u32 keys (bucket, hash bytes 0-7); the
 * comparator reads the arena only for exact ties of the first 8 hash bytes.
 */
export interface RunSegment {
  readonly bucket: number
  readonly start: number
  readonly end: number
  readonly records: number
}

/** A sorted run spilled to a file; segments are byte ranges of it. */
export interface FileRun {
  readonly kind: 'file'
  readonly path: string
  readonly segments: readonly RunSegment[]
}

/**
 * A sorted run left in shared memory: the arena plus the record positions in sorted
 * order; segments are index ranges of `order`. Reducers on other threads read it in
 * place, so a build that fits in memory never writes or reads a run file.
 */
export interface MemoryRun {
  readonly kind: 'memory'
  readonly arena: SharedArrayBuffer
  readonly order: SharedArrayBuffer
  readonly segments: readonly RunSegment[]
}

export type SortedRun = FileRun | MemoryRun

/** Bytes of bookkeeping per record beside the arena: position, sort keys, two order arrays. */
const PER_RECORD_OVERHEAD = 24

export class SortBuffer {
  private readonly arena: Buffer
  private readonly positions: Uint32Array
  private readonly buckets: Uint32Array
  private readonly his: Uint32Array
  private readonly los: Uint32Array
  private readonly sorter = new RadixSorter()
  private used = 0
  private count = 0
  /** The addon's packMapped, unless it is not loaded (or the caller asked for JavaScript). */
  private readonly pack: NativeFunctions['packMapped'] | undefined
  /** packMapped's [used, count], read and written by the addon. */
  private readonly state = new Float64Array(2)

  /**
   * `budgetBytes` covers the arena and the per-record arrays; `times` receives sort and
   * spill seconds; `native: false` keeps the addon out (tests of the JavaScript twin).
   */
  constructor(
    budgetBytes: number,
    private readonly times?: StageTimes,
    native = true,
  ) {
    this.pack = native ? nativeFunctions()?.packMapped : undefined
    const arenaBytes = Math.max(64 << 10, Math.min(Math.floor(budgetBytes * 0.8), 0x7fff0000))
    const maxRecords = Math.max(16, Math.floor((budgetBytes - arenaBytes) / PER_RECORD_OVERHEAD), Math.floor(arenaBytes / 256))
    // Touched once each, front to back: huge pages save most of their first-touch faults.
    this.arena = Buffer.from(workingMemory(arenaBytes))
    this.positions = new Uint32Array(workingMemory(4 * maxRecords))
    this.buckets = new Uint32Array(workingMemory(4 * maxRecords))
    this.his = new Uint32Array(workingMemory(4 * maxRecords))
    this.los = new Uint32Array(workingMemory(4 * maxRecords))
  }

  get size(): number {
    return this.count
  }

  /** Whether a record of this many bytes can ever fit, even in an empty buffer. */
  fitsEmpty(bytes: number): boolean {
    return bytes <= this.arena.length
  }

  /** False when full: spill, then add again. */
  add(r: MappedRecord): boolean {
    const size = mappedSize(r)
    if (this.count === this.positions.length || this.used + size > this.arena.length) return false
    encodeMapped(r, this.arena, this.used)
    this.positions[this.count] = this.used
    this.buckets[this.count] = r.bucket
    this.his[this.count] = readU32(r.hash, 0)
    this.los[this.count] = readU32(r.hash, 4)
    this.used += size
    this.count++
    return true
  }

  /**
   * `add` from byte ranges, the batch map step's way: the hash is hashes[hashAt, +16), the
   * key keySrc[keyStart, keyEnd), the value valueSrc[valueStart, valueEnd). No object and
   * no view per record. False when full.
   */
  addRaw(
    bucket: number,
    hashes: Uint8Array,
    hashAt: number,
    fileIndex: number,
    order: number,
    line: number,
    keySrc: Buffer,
    keyStart: number,
    keyEnd: number,
    valueSrc: Buffer,
    valueStart: number,
    valueEnd: number,
  ): boolean {
    const keyLen = keyEnd - keyStart
    const valueLen = valueEnd - valueStart
    const at = this.used
    const size = MAPPED_HEADER_SIZE + keyLen + valueLen
    if (this.count === this.positions.length || at + size > this.arena.length) return false
    const a = this.arena
    writeU32BE(a, at, bucket)
    for (let i = 0; i < 16; i++) a[at + 4 + i] = hashes[hashAt + i]!
    writeU32BE(a, at + 20, fileIndex)
    a.writeDoubleBE(order, at + 24)
    a.writeDoubleBE(line, at + 32)
    writeU32BE(a, at + 40, keyLen)
    writeU32BE(a, at + 44, valueLen)
    const k = at + MAPPED_HEADER_SIZE
    // Short keys: a byte loop beats the call into Buffer.copy.
    if (keyLen <= 32) for (let i = 0; i < keyLen; i++) a[k + i] = keySrc[keyStart + i]!
    else keySrc.copy(a, k, keyStart, keyEnd)
    if (valueLen > 0) valueSrc.copy(a, k + keyLen, valueStart, valueEnd)
    const n = this.count
    this.positions[n] = at
    this.buckets[n] = bucket
    this.his[n] = readU32(hashes, hashAt)
    this.los[n] = readU32(hashes, hashAt + 4)
    this.used = at + size
    this.count = n + 1
    return true
  }

  /**
   * `addRaw` for many records of one batch: entry j is record entryRecord[j] of the batch
   * (its hash at hashes[16 r]) going to bucket entryBucket[j]. Returns the first entry not
   * added, `to` when all fit: the caller spills and goes on from there. One call into the
   * addon where it loads (a call per record into Buffer.copy was a quarter of the map
   * step); addEntriesJs otherwise, with the same bytes.
   */
  addEntries(
    batch: RecordBatch,
    hashes: Uint8Array,
    fileIndex: number,
    entryRecord: Uint32Array,
    entryBucket: Uint32Array,
    from: number,
    to: number,
  ): number {
    const pack = this.pack
    if (pack === undefined) return this.addEntriesJs(batch, hashes, fileIndex, entryRecord, entryBucket, from, to)
    const state = this.state
    state[0] = this.used
    state[1] = this.count
    const { buf, keyStart, keyEnd, valueStart, valueEnd, order, line } = batch
    const next = pack(
      this.arena,
      state,
      this.positions,
      this.buckets,
      this.his,
      this.los,
      hashes,
      buf,
      keyStart,
      keyEnd,
      valueStart,
      valueEnd,
      order,
      line,
      fileIndex,
      entryRecord,
      entryBucket,
      from,
      to,
    )
    this.used = state[0]!
    this.count = state[1]!
    return next
  }

  /** addEntries in JavaScript (no addon, or ROSTORE_NATIVE=0): addRaw per entry. */
  addEntriesJs(
    batch: RecordBatch,
    hashes: Uint8Array,
    fileIndex: number,
    entryRecord: Uint32Array,
    entryBucket: Uint32Array,
    from: number,
    to: number,
  ): number {
    const { buf, keyStart, keyEnd, valueStart, valueEnd, order, line } = batch
    for (let j = from; j < to; j++) {
      const r = entryRecord[j]!
      const added = this.addRaw(
        entryBucket[j]!,
        hashes,
        16 * r,
        fileIndex,
        order[r]!,
        line[r]!,
        buf,
        keyStart[r]!,
        keyEnd[r]!,
        buf,
        valueStart[r]!,
        valueEnd[r]!,
      )
      if (!added) return j
    }
    return to
  }

  /** Sorts what is buffered, writes it to `path` as one run, and empties the buffer. */
  spill(path: string): FileRun {
    const order = this.sortedOrder()
    const t0 = process.hrtime.bigint()
    const segments: RunSegment[] = []
    const fd = openSync(path, 'w')
    try {
      const out = Buffer.allocUnsafe(1 << 20)
      let outUsed = 0
      let filePos = 0
      let segStart = 0
      let segRecords = 0
      let segBucket = -1
      for (let i = 0; i < order.length; i++) {
        const idx = order[i] as number
        const bucket = this.buckets[idx] as number
        if (bucket !== segBucket) {
          if (segRecords > 0) segments.push({ bucket: segBucket, start: segStart, end: filePos + outUsed, records: segRecords })
          segBucket = bucket
          segStart = filePos + outUsed
          segRecords = 0
        }
        const at = this.positions[idx] as number
        const size = MAPPED_HEADER_SIZE + readU32(this.arena, at + 40) + readU32(this.arena, at + 44)
        if (outUsed + size > out.length) {
          filePos += writeAll(fd, out.subarray(0, outUsed), filePos)
          outUsed = 0
        }
        if (size > out.length) filePos += writeAll(fd, this.arena.subarray(at, at + size), filePos)
        else {
          this.arena.copy(out, outUsed, at, at + size)
          outUsed += size
        }
        segRecords++
      }
      filePos += writeAll(fd, out.subarray(0, outUsed), filePos)
      if (segRecords > 0) segments.push({ bucket: segBucket, start: segStart, end: filePos, records: segRecords })
    } catch (err) {
      throw new StoreError('RO_IO', `cannot write sorted run ${path}: ${(err as Error).message}`, { cause: err })
    } finally {
      closeSync(fd)
    }
    this.used = 0
    this.count = 0
    if (this.times) this.times.spill += Number(process.hrtime.bigint() - t0) / 1e9
    return { kind: 'file', path, segments }
  }

  /** Sorts what is buffered and hands the arena over as a memory run; the buffer is spent. */
  toMemoryRun(): MemoryRun {
    const order = this.sortedOrder()
    const sorted = new Uint32Array(workingMemory(Math.max(4, order.length * 4)))
    const segments: RunSegment[] = []
    let segStart = 0
    for (let i = 0; i < order.length; i++) {
      const idx = order[i] as number
      sorted[i] = this.positions[idx] as number
      const bucket = this.buckets[idx] as number
      if (i + 1 === order.length || this.buckets[order[i + 1] as number] !== bucket) {
        segments.push({ bucket, start: segStart, end: i + 1, records: i + 1 - segStart })
        segStart = i + 1
      }
    }
    this.count = 0
    this.used = this.arena.length
    return { kind: 'memory', arena: this.arena.buffer as SharedArrayBuffer, order: sorted.buffer as SharedArrayBuffer, segments }
  }

  private sortedOrder(): Uint32Array {
    const t0 = process.hrtime.bigint()
    const { buckets, his, los, arena, positions } = this
    const order = this.sorter.sort(this.count, buckets, his, los)
    sortTies(order, buckets, his, los, (a, b) => compareTail(arena, positions[a] as number, positions[b] as number))
    if (this.times) this.times.sort += Number(process.hrtime.bigint() - t0) / 1e9
    return order
  }
}

/** Ties on the first 8 hash bytes: rest of the hash, key, then input position. */
function compareTail(arena: Buffer, a: number, b: number): number {
  const h = arena.compare(arena, b + 12, b + 20, a + 12, a + 20)
  if (h !== 0) return h
  const ka = arena.readUInt32BE(a + 40)
  const kb = arena.readUInt32BE(b + 40)
  const k = arena.compare(arena, b + MAPPED_HEADER_SIZE, b + MAPPED_HEADER_SIZE + kb, a + MAPPED_HEADER_SIZE, a + MAPPED_HEADER_SIZE + ka)
  if (k !== 0) return k
  return arena.readUInt32BE(a + 20) - arena.readUInt32BE(b + 20) || arena.readDoubleBE(a + 24) - arena.readDoubleBE(b + 24)
}
