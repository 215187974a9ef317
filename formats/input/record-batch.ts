/**
 * Input records in batches, for the builder's hot loop: a batch is one buffer plus the
 * byte ranges of each record's key and value, its line (or row) and its order, in typed
 * arrays. No object and no Buffer view per record. TSV with the default columns is read
 * straight from line batches; every other format and option goes through its record
 * reader, whose keys and values are copied into the batch buffer.
 *
 * A batch and its arrays are reused: read it before pulling the next.
 */
import { atLine, badInput } from './input-error'
import { readLineBatches } from './lines'
import { readInput } from './read-input'
import { keyProblem } from './row-value'
import { tsvColumns } from './tsv'
import { MAX_KEY_BYTES, type InputFormat, type KeyKind, type ReadOptions, type ValueKind } from './types'

export interface KindTally {
  keys: Record<KeyKind, number>
  values: Record<ValueKind, number>
}

export interface RecordBatch {
  buf: Buffer
  count: number
  readonly keyStart: Uint32Array
  readonly keyEnd: Uint32Array
  readonly valueStart: Uint32Array
  readonly valueEnd: Uint32Array
  /** Line (text formats) or row (columnar formats) of each record, for messages. */
  readonly line: Float64Array
  /** Position of each record in its file (see InputRecord.order). */
  readonly order: Float64Array
  /** Key and value kinds of the records of this batch. */
  readonly kinds: KindTally
}

/** Records per batch: enough to make per-batch calls cheap, few enough to stay in cache. */
export const BATCH_RECORDS = 4096
/** Bytes a copied batch collects before it is handed out (one record may exceed it). */
const BATCH_BYTES = 1 << 20

function newBatch(): RecordBatch {
  return {
    buf: Buffer.alloc(0),
    count: 0,
    keyStart: new Uint32Array(BATCH_RECORDS),
    keyEnd: new Uint32Array(BATCH_RECORDS),
    valueStart: new Uint32Array(BATCH_RECORDS),
    valueEnd: new Uint32Array(BATCH_RECORDS),
    line: new Float64Array(BATCH_RECORDS),
    order: new Float64Array(BATCH_RECORDS),
    kinds: { keys: { string: 0, bytes: 0 }, values: { string: 0, json: 0, bytes: 0 } },
  }
}

function clearKinds(k: KindTally): void {
  k.keys.string = 0
  k.keys.bytes = 0
  k.values.string = 0
  k.values.json = 0
  k.values.bytes = 0
}

/** The records of one file (or split) in batches; same records, order and errors as readInput. */
export function readRecordBatches(path: string, format: InputFormat, opts: ReadOptions = {}): AsyncGenerator<RecordBatch> {
  if (format === 'tsv' && tsvColumns(opts) === undefined) return tsvBatches(path, opts)
  return copiedBatches(path, format, opts)
}

const TAB = 0x09

/** TSV, key<TAB>rest: the ranges of each line, found in the reused read buffer. */
async function* tsvBatches(path: string, opts: ReadOptions): AsyncGenerator<RecordBatch> {
  const batch = newBatch()
  const signal = opts.signal
  signal?.throwIfAborted()
  const lines = readLineBatches(path, { start: opts.start, end: opts.end, signal, blankWhitespace: false, reuseBuffer: true })
  for await (const { buf, base, firstLine, count, starts, ends } of lines) {
    if (signal?.aborted) signal.throwIfAborted()
    batch.buf = buf
    let n = 0
    for (let i = 0; i < count; i++) {
      const s = starts[i]!
      const e = ends[i]!
      // Keys are short: a loop over their bytes beats a call into indexOf.
      let tab = s
      while (tab < e && buf[tab] !== TAB) tab++
      if (tab === e) throw badInput(atLine(path, firstLine + i), 'no tab separator')
      const keyLength = tab - s
      if (keyLength === 0 || keyLength > MAX_KEY_BYTES) {
        throw badInput(atLine(path, firstLine + i), keyProblem(buf.subarray(s, tab)) ?? 'bad key')
      }
      batch.keyStart[n] = s
      batch.keyEnd[n] = tab
      batch.valueStart[n] = tab + 1
      batch.valueEnd[n] = e
      batch.line[n] = firstLine + i
      batch.order[n] = base + s
      if (++n === BATCH_RECORDS) {
        yield done(batch, n)
        n = 0
      }
    }
    if (n > 0) yield done(batch, n)
  }
}

function done(batch: RecordBatch, n: number): RecordBatch {
  batch.count = n
  clearKinds(batch.kinds)
  batch.kinds.keys.string = n
  batch.kinds.values.string = n
  return batch
}

/** Any format: records from its reader, key and value bytes copied into the batch buffer. */
async function* copiedBatches(path: string, format: InputFormat, opts: ReadOptions): AsyncGenerator<RecordBatch> {
  const batch = newBatch()
  batch.buf = Buffer.allocUnsafe(BATCH_BYTES)
  let n = 0
  let used = 0
  for await (const rec of readInput(path, format, opts)) {
    const size = rec.key.length + rec.value.length
    if (n === BATCH_RECORDS || (n > 0 && used + size > batch.buf.length)) {
      batch.count = n
      yield batch
      n = 0
      used = 0
      clearKinds(batch.kinds)
    }
    if (size > batch.buf.length) batch.buf = Buffer.allocUnsafe(size)
    const b = batch.buf
    rec.key.copy(b, used)
    batch.keyStart[n] = used
    used += rec.key.length
    batch.keyEnd[n] = used
    rec.value.copy(b, used)
    batch.valueStart[n] = used
    used += rec.value.length
    batch.valueEnd[n] = used
    batch.line[n] = rec.source.line ?? rec.source.row ?? 0
    batch.order[n] = rec.order
    batch.kinds.keys[rec.keyKind]++
    batch.kinds.values[rec.valueKind]++
    n++
  }
  if (n > 0) {
    batch.count = n
    yield batch
  }
}
