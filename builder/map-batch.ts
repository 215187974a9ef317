import { readU32BE } from '../common/bytes'
import type { RecordBatch } from '../formats/input/record-batch'
import type { MapContext } from './map-step'
import type { SortBuffer } from './sort-buffer'

/**
 * The map step over a batch of input records (local engine): one hash call for the whole
 * batch, then per record and replica the bucket and the record's byte ranges handed to
 * `sink`. Routing and chunk rule are those of mapRecord (map-step.ts), which the Hadoop
 * mapper uses per record; the mapped records are the same.
 */
/** One mapped record from byte ranges: SortBuffer.addRaw's arguments (its result is not used). */
export type MappedSink = (...record: Parameters<SortBuffer['addRaw']>) => void

export class BatchMapper {
  /** MD5 of each record of the last batch, 16 bytes per record. */
  hashes = new Uint8Array(16 * 4096)
  /** plan(): entry j is record entryRecord[j] going to bucket entryBucket[j]. */
  entryRecord = new Uint32Array(4096)
  entryBucket = new Uint32Array(4096)
  /** Values are stored as read (no compression): plan() applies. */
  readonly plain: boolean
  /** Value bytes before and after the codec, over every batch mapped (0 with no codec). */
  rawValueBytes = 0
  storedValueBytes = 0

  constructor(private readonly ctx: MapContext) {
    this.plain = ctx.codec.name === 'none'
  }

  /**
   * The batch with its values encoded by the store's codec in one call, keys and values
   * in the codec's buffer (valid until the next batch), for plan(); undefined when the
   * codec encodes per value only (map() then).
   */
  encode(batch: RecordBatch): RecordBatch | undefined {
    const encodeRecords = this.ctx.codec.encodeRecords
    if (encodeRecords === undefined) return undefined
    const n = batch.count
    const e = encodeRecords(batch, n)
    for (let i = 0; i < n; i++) {
      this.rawValueBytes += batch.valueEnd[i]! - batch.valueStart[i]!
      this.storedValueBytes += e.valueEnd[i]! - e.valueStart[i]!
    }
    return { ...batch, buf: e.buf, keyStart: e.keyStart, keyEnd: e.keyEnd, valueStart: e.valueStart, valueEnd: e.valueEnd }
  }

  /**
   * The map step without a sink, for batches whose values are stored as they are (no
   * compression, or encoded by encode()): hashes the batch and
   * lists its entries (one per record and replica) in entryRecord/entryBucket, for
   * SortBuffer.addEntries. Returns the number of entries. Same routing as `map`.
   */
  plan(batch: RecordBatch): number {
    const { ctx } = this
    const n = batch.count
    if (this.hashes.length < 16 * n) this.hashes = new Uint8Array(16 * n)
    const hashes = this.hashes
    ctx.hasher.hashBatch(batch.buf, batch.keyStart, batch.keyEnd, n, hashes)
    const partitions = ctx.ring.partitionCount
    const chunks = ctx.chunks
    const bases = ctx.bucketBases
    let m = 0
    for (let i = 0; i < n; i++) {
      const h = 16 * i
      const chunk = readU32BE(hashes, h + 4) % chunks
      const replicas = bases[readU32BE(hashes, h) % partitions] as readonly number[]
      if (m + replicas.length > this.entryRecord.length) this.growEntries(m + replicas.length)
      for (let r = 0; r < replicas.length; r++) {
        this.entryRecord[m] = i
        this.entryBucket[m] = replicas[r]! + chunk
        m++
      }
    }
    return m
  }

  private growEntries(min: number): void {
    const size = Math.max(min, 2 * this.entryRecord.length)
    const record = new Uint32Array(size)
    const bucket = new Uint32Array(size)
    record.set(this.entryRecord)
    bucket.set(this.entryBucket)
    this.entryRecord = record
    this.entryBucket = bucket
  }

  map(batch: RecordBatch, fileIndex: number, sink: MappedSink): void {
    const { ctx } = this
    const n = batch.count
    if (this.hashes.length < 16 * n) this.hashes = new Uint8Array(16 * n)
    const hashes = this.hashes
    const { buf, keyStart, keyEnd, valueStart, valueEnd, line, order } = batch
    ctx.hasher.hashBatch(buf, keyStart, keyEnd, n, hashes)
    const partitions = ctx.ring.partitionCount
    const chunks = ctx.chunks
    const bases = ctx.bucketBases
    for (let i = 0; i < n; i++) {
      const h = 16 * i
      const chunk = readU32BE(hashes, h + 4) % chunks
      const replicas = bases[readU32BE(hashes, h) % partitions] as readonly number[]
      let vSrc = buf
      let vs = valueStart[i]!
      let ve = valueEnd[i]!
      if (!this.plain) {
        vSrc = ctx.codec.encode(buf.subarray(vs, ve))
        this.rawValueBytes += ve - vs
        this.storedValueBytes += vSrc.length
        vs = 0
        ve = vSrc.length
      }
      for (let r = 0; r < replicas.length; r++) {
        sink(replicas[r]! + chunk, hashes, h, fileIndex, order[i]!, line[i]!, buf, keyStart[i]!, keyEnd[i]!, vSrc, vs, ve)
      }
    }
  }
}
