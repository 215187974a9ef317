import { StoreError } from '../../../common/errors'
import { LOOKUP_COLD, LOOKUP_HIT, LOOKUP_MISS, LOOKUP_NEEDS_ROOM, lookupFailure, type LookupFunctions } from '../../../common/native'
import type { ValueCodec } from '../chunk/codec'
import { ColdPreads } from './cold-pread'
import { corrupt, decodeIn } from '../chunk/header'
import type { HotSetParts } from './hot-set'
import { KeyBatch } from './key-batch'
import { releaseMappingsSoon } from './mapping-release'
import type { MappedChunk } from './mapped-chunk'
import type { StoreMetadata } from '../layout/metadata'
import type { ChunkGeometry } from '../layout/partition-files'
import type { ResidencyMap, ResidencyStats } from './residency'
import type { StoreOps } from './store-ops'
import {
  FRAMED_COLD,
  storedValuesOf,
  type AccessMode,
  type FrameSink,
  type ServingReader,
  type StoredValues,
  type ValueFraming,
} from './store-reader-api'
import { writeFramed, writeFramedInto, writeValueInto } from '../chunk/value-framing'

/** Keys up to this many bytes go through the reader's scratch buffer; longer ones through a one-key batch. */
const KEY_SCRATCH_BYTES = 1 << 16
/**
 * Warm-ups of one async read before it reads through the mapping whatever the map says:
 * a record found cold again (evicted between warm-up and read, or a hash collision's
 * second record) costs another round on the pool, and progress is guaranteed.
 */
const MAX_WARM_ROUNDS = 3

/**
 * The 'mmap' reader: one native call per lookup (hash, chunk, search, record checks) and
 * a Buffer view of the mapping per value. Its JS heap holds a few objects per chunk,
 * whatever the number of records: the index is searched where it is mapped, and the
 * radix tables (4 bytes per 2^RADIX_SHIFT records) live outside the JS heap.
 */
export class MappedStoreReader implements ServingReader {
  readonly accessMode: AccessMode = 'mmap'
  private readonly key = Buffer.alloc(KEY_SCRATCH_BYTES)
  private readonly out = new Float64Array(8)
  private readonly batch = new KeyBatch()
  private lookup: LookupFunctions | undefined
  private chunks: readonly MappedChunk[]
  private readonly geometry: ChunkGeometry
  private readonly plain: boolean
  private readonly preads: ColdPreads

  constructor(
    readonly dir: string,
    readonly metadata: StoreMetadata,
    private readonly ops: StoreOps,
    chunks: readonly MappedChunk[],
    private readonly codec: ValueCodec,
    private readonly map: ResidencyMap | undefined,
    opts: { readonly geometry: ChunkGeometry; readonly binary: boolean; readonly verifyRecords: boolean; readonly collideBits: number },
  ) {
    this.chunks = chunks
    this.geometry = opts.geometry
    const g = opts.geometry
    this.plain = codec.name === 'none'
    const files = chunks.map((c) => ({ path: c.dataFile, size: c.dataSize, expect: c.count > 0 ? c.dataSize / c.count : 0 }))
    this.preads = new ColdPreads(files, {
      map,
      codec,
      crc32: opts.verifyRecords ? ops.crc32 : undefined,
      readAt: map?.io === 'uring' ? ops.preadRing : undefined,
    })
    this.lookup = ops.createLookup({
      chunks,
      key: this.key,
      out: this.out,
      binary: opts.binary,
      checkCrc: opts.verifyRecords,
      collideBits: opts.collideBits,
      ...(g.slots && g.partitionCount !== undefined ? { partitions: { count: g.partitionCount, slots: g.slots, chunks: g.chunks } } : {}),
    })
  }

  get lastProbes(): number {
    return this.out[3] as number
  }

  get(key: Uint8Array | string): Buffer | undefined {
    return this.getOne(key, true)
  }

  /** get(); `counted`: the lookup counts as a read in the map's hit ratio (getAsync's retry has been counted). */
  private getOne(key: Uint8Array | string, counted: boolean): Buffer | undefined {
    const lookup = this.open()
    const len = this.writeKey(key)
    if (len < 0) return this.getMany([key])[0]
    const map = this.map
    if (map && counted) map.reads++
    const status = lookup.get(len, map !== undefined)
    if (status === LOOKUP_MISS) return undefined
    const out = this.out
    if (status === LOOKUP_HIT) return this.value(out[0] as number, out[1] as number, out[2] as number)
    if (status === LOOKUP_COLD) return this.coldGet(len)
    this.fail(status, out[0] as number, out[4] as number)
  }

  /**
   * A cold record for the synchronous get: its bytes with one pread on the caller's thread,
   * one device request for the whole record, where faulting it in through the mapping
   * (MADV_RANDOM) takes one request per page, one after the other, for a record that
   * crosses a page boundary.
   */
  private coldGet(len: number): Buffer | undefined {
    const out = this.out
    // A view of the key scratch: nothing writes it again before this read returns.
    const value = this.preads.valueSync(this.key.subarray(0, len), out[0] as number, out[4] as number, out[2] as number)
    if (value !== 'unusable') return value
    // Another key under the same hash prefix, or a damaged record: the mapped path decides.
    const status = this.open().get(len)
    if (status === LOOKUP_MISS) return undefined
    if (status !== LOOKUP_HIT) this.fail(status, out[0] as number, out[4] as number)
    return this.value(out[0] as number, out[1] as number, out[2] as number)
  }

  async getAsync(key: Uint8Array | string): Promise<Buffer | undefined> {
    const map = this.map
    const len = map ? this.writeKey(key) : -1
    if (!map || len < 0) {
      await this.warmRounds([key])
      return this.getOne(key, false)
    }
    map.reads++
    const status = this.open().get(len, true)
    const out = this.out
    if (status === LOOKUP_MISS) return undefined
    if (status === LOOKUP_HIT) return this.value(out[0] as number, out[1] as number, out[2] as number)
    if (status !== LOOKUP_COLD) this.fail(status, out[0] as number, out[4] as number)
    const value = await this.preads.value(Buffer.from(this.key.subarray(0, len)), out[0] as number, out[4] as number, out[2] as number)
    if (value !== 'unusable') return value
    // Another key under the same hash prefix, or a damaged record: the mapped path decides.
    await this.warmRounds([key])
    return this.getOne(key, false)
  }

  async getManyAsync(keys: readonly (Uint8Array | string)[]): Promise<(Buffer | undefined)[]> {
    await this.warmRounds(keys)
    return this.getMany(keys)
  }

  warm(keys: readonly (Uint8Array | string)[]): Promise<void> | undefined {
    return this.warmOnce(keys, true)
  }

  private async warmRounds(keys: readonly (Uint8Array | string)[]): Promise<void> {
    for (let round = 0; round < MAX_WARM_ROUNDS; round++) {
      const w = this.warmOnce(keys, round === 0)
      if (!w) return
      await w
    }
  }

  /** warm(); `counted`: the keys count as reads in the map's hit ratio (a retry does not). */
  private warmOnce(keys: readonly (Uint8Array | string)[], counted: boolean): Promise<void> | undefined {
    const map = this.map
    if (!map) return undefined
    if (counted) map.reads += keys.length
    const cold = this.coldRecords(keys)
    if (!cold) return undefined
    if (cold.length === 3) return map.warm(cold[0] as number, cold[1] as number, cold[2] as number)
    const warms: Promise<void>[] = []
    for (let i = 0; i < cold.length; i += 3) warms.push(map.warm(cold[i] as number, cold[i + 1] as number, cold[i + 2] as number))
    return Promise.all(warms).then(() => undefined)
  }

  /** (chunk, record offset, bytes) of each record of `keys` not marked resident, or undefined when none. */
  private coldRecords(keys: readonly (Uint8Array | string)[]): number[] | undefined {
    const lookup = this.open()
    const len = keys.length === 1 ? this.writeKey(keys[0] as Uint8Array | string) : -1
    if (len >= 0) {
      if (lookup.get(len, true) !== LOOKUP_COLD) return undefined
      const out = this.out
      return [out[0] as number, out[4] as number, out[2] as number]
    }
    const b = this.batch
    b.fill(keys)
    lookup.getMany(b.bytes, b.ends, keys.length, b.out, true)
    const out = b.out
    let cold: number[] | undefined
    for (let i = 0; i < keys.length; i++) {
      if (out[4 * i] === LOOKUP_COLD) (cold ??= []).push(out[4 * i + 1] as number, out[4 * i + 2] as number, out[4 * i + 3] as number)
    }
    return cold
  }

  residency(): ResidencyStats | undefined {
    return this.map?.stats()
  }

  /** Its chunks and residency map, for carrying the hot set to the next version (hot-set.ts); undefined without a map. */
  hotSetParts(): HotSetParts | undefined {
    return this.map && this.lookup ? { chunks: this.chunks, map: this.map, geometry: this.geometry } : undefined
  }

  getMany(keys: readonly (Uint8Array | string)[]): (Buffer | undefined)[] {
    return this.readMany(keys, true)
  }

  getStored(key: Uint8Array | string): Buffer | undefined {
    return this.readMany([key], false)[0]
  }

  getManyStored(keys: readonly (Uint8Array | string)[]): (Buffer | undefined)[] {
    return this.readMany(keys, false)
  }

  storedValues(): StoredValues {
    return storedValuesOf(this.metadata, this.codec)
  }

  /** getMany(), the values decompressed or (`decode` false) as stored. */
  private readMany(keys: readonly (Uint8Array | string)[], decode: boolean): (Buffer | undefined)[] {
    const out = this.lookupMany(keys)
    const values = new Array<Buffer | undefined>(keys.length)
    for (let i = 0; i < keys.length; i++) {
      const status = out[4 * i] as number
      if (status === LOOKUP_MISS) values[i] = undefined
      else if (status === LOOKUP_HIT)
        values[i] = this.value(out[4 * i + 1] as number, out[4 * i + 2] as number, out[4 * i + 3] as number, decode)
      else this.fail(status, out[4 * i + 1] as number, out[4 * i + 2] as number)
    }
    return values
  }

  getManyFramed(keys: readonly (Uint8Array | string)[], framing: ValueFraming): Buffer
  getManyFramed(keys: readonly (Uint8Array | string)[], framing: ValueFraming, maxBytes: number): Buffer | undefined
  getManyFramed(keys: readonly (Uint8Array | string)[], framing: ValueFraming, maxBytes?: number): Buffer | undefined {
    const out = this.checkedLookups(keys)
    if (this.plain) return writeFramed(framing, keys.length, out, this.open().frame, maxBytes)
    // Compressed values are decoded one by one anyway: frame the decoded Buffers.
    const values = this.getMany(keys)
    return writeFramed(framing, keys.length, values, undefined, maxBytes)
  }

  getFramedInto(key: Uint8Array | string, framing: ValueFraming, sink: FrameSink): boolean
  getFramedInto(key: Uint8Array | string, framing: ValueFraming, sink: FrameSink, ifResident: true): boolean | undefined
  getFramedInto(key: Uint8Array | string, framing: ValueFraming, sink: FrameSink, ifResident = false): boolean | undefined {
    const lookup = this.open()
    const cold = ifResident && this.map !== undefined
    const len = this.writeKey(key)
    if (len < 0 || !this.plain) {
      if (cold && this.coldRecords([key]) !== undefined) return undefined
      return writeValueInto(sink, framing, len < 0 ? this.getMany([key])[0] : this.getOne(key, cold))
    }

    const prefix = framing.prefix
    const resp = framing.length === 'resp'
    const out = this.out
    // Room for the usual answer; a value too long for it is framed again after growing.
    sink.reserve(prefix.length + 64)
    for (;;) {
      const status = lookup.getFramed(len, sink.buf, sink.pos + prefix.length, resp, framing.absent, framing.suffix, cold)
      // Cold: the caller's warm() counts this read; a hot one is counted here.
      if (status === LOOKUP_COLD) return undefined
      if (status === LOOKUP_NEEDS_ROOM) {
        sink.reserve(prefix.length + (out[2] as number) + 24 + framing.suffix.length + framing.absent.length)
        continue
      }
      if (cold) (this.map as ResidencyMap).reads++
      if (status !== LOOKUP_HIT && status !== LOOKUP_MISS) this.fail(status, out[0] as number, out[4] as number)
      sink.buf.set(prefix, sink.pos)
      sink.pos = out[5] as number
      return status === LOOKUP_HIT
    }
  }

  getManyFramedInto(
    keys: readonly (Uint8Array | string)[],
    framing: ValueFraming,
    sink: FrameSink,
    maxBytes?: number,
    ifResident = false,
  ): number {
    const map = ifResident ? this.map : undefined
    if (map && !this.plain) {
      if (this.coldRecords(keys) !== undefined) return FRAMED_COLD
      map.reads += keys.length
      return writeFramedInto(sink, framing, keys.length, this.getMany(keys), undefined, maxBytes)
    }
    const out = this.checkedLookups(keys, map !== undefined)
    if (map) {
      // Cold: the caller's warm() counts these reads; hot ones are counted here.
      for (let i = 0; i < keys.length; i++) if (out[4 * i] === LOOKUP_COLD) return FRAMED_COLD
      map.reads += keys.length
    }
    if (this.plain) return writeFramedInto(sink, framing, keys.length, out, this.open().frame, maxBytes)
    return writeFramedInto(sink, framing, keys.length, this.getMany(keys), undefined, maxBytes)
  }

  close(): void {
    // Only references are dropped: the mappings are unmapped by their deleters once no
    // view of them (a value held by a caller) is reachable, at the collection asked for
    // here (or a later one, for values still held).
    if (!this.lookup) return
    this.map?.close()
    this.preads.close()
    this.lookup.close()
    this.lookup = undefined
    this.chunks = []
    releaseMappingsSoon(this.ops)
  }

  private open(): LookupFunctions {
    if (!this.lookup) throw new StoreError('RO_CONFLICT', `${this.dir}: reader is closed`)
    return this.lookup
  }

  /** lookupMany, throwing the first damaged record found. */
  private checkedLookups(keys: readonly (Uint8Array | string)[], cold = false): Float64Array {
    const out = this.lookupMany(keys, cold)
    for (let i = 0; i < keys.length; i++) {
      const status = out[4 * i] as number
      if (status < 0) this.fail(status, out[4 * i + 1] as number, out[4 * i + 2] as number)
    }
    return out
  }

  private lookupMany(keys: readonly (Uint8Array | string)[], cold = false): Float64Array {
    const lookup = this.open()
    const b = this.batch
    b.fill(keys)
    lookup.getMany(b.bytes, b.ends, keys.length, b.out, cold)
    return b.out
  }

  /** Writes the key into the scratch buffer; -1 when it does not fit. */
  private writeKey(key: Uint8Array | string): number {
    const k = this.key
    if (typeof key === 'string') {
      const n = key.length
      if (n <= 64) {
        // Short ASCII keys (the common case) without a call into the UTF-8 encoder.
        let i = 0
        for (; i < n; i++) {
          const c = key.charCodeAt(i)
          if (c >= 0x80) break
          k[i] = c
        }
        if (i === n) return n
      }
      if (n * 3 > k.length && Buffer.byteLength(key, 'utf8') > k.length) return -1
      return k.write(key, 0, 'utf8')
    }
    if (key.length > k.length) return -1
    k.set(key)
    return key.length
  }

  private value(chunk: number, offset: number, length: number, decode = true): Buffer {
    const windows = (this.chunks[chunk] as MappedChunk).data
    const w = (windows[0] as ArrayBufferLike).byteLength
    let v: Buffer
    if (windows.length === 1) v = Buffer.from(windows[0] as ArrayBuffer, offset, length)
    else {
      const k = Math.floor(offset / w)
      const local = offset - k * w
      if (local + length <= w) v = Buffer.from(windows[k] as ArrayBuffer, local, length)
      else v = copyAcross(windows, w, offset, length)
    }
    return this.plain || !decode ? v : decodeIn(this.codec, v, (this.chunks[chunk] as MappedChunk).dataFile, offset)
  }

  private fail(status: number, chunk: number, recordOffset: number): never {
    const c = this.chunks[chunk]
    corrupt(c?.dataFile ?? `${this.dir} chunk ${chunk}`, lookupFailure(status, recordOffset))
  }
}

/** A value that straddles two windows of a data file larger than one window: copied once. */
function copyAcross(windows: readonly ArrayBufferLike[], w: number, offset: number, length: number): Buffer {
  const v = Buffer.allocUnsafe(length)
  for (let done = 0; done < length;) {
    const at = offset + done
    const k = Math.floor(at / w)
    const from = at - k * w
    const n = Math.min(length - done, w - from)
    v.set(new Uint8Array(windows[k] as ArrayBuffer, from, n), done)
    done += n
  }
  return v
}
