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
  private hashes = new Uint8Array(16 * 4096)
  private readonly plain: boolean

  constructor(private readonly ctx: MapContext) {
    this.plain = ctx.codec.name === 'none'
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
        vs = 0
        ve = vSrc.length
      }
      for (let r = 0; r < replicas.length; r++) {
        sink(replicas[r]! + chunk, hashes, h, fileIndex, order[i]!, line[i]!, buf, keyStart[i]!, keyEnd[i]!, vSrc, vs, ve)
      }
    }
  }
}
