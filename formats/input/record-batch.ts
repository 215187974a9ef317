/**
 * Input records in batches, for the builder's hot loop: a batch is one buffer plus the
 * byte ranges of each record's key and value, its line (or row) and its order, in typed
 * arrays. No object and no Buffer view per record. TSV with the default columns is read
 * straight from line batches; every other format and option goes through its record
 * reader, whose keys and values are copied into the batch buffer.
 *
 * A batch and its arrays are reused: read it before pulling the next.
 */
import { isUtf8 } from 'node:buffer'
import { atLine, badInput } from './input-error'
import { readLineBatches } from './lines'
import type { ParquetRowSpan, PlainRuns } from './parquet'
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
/** Four ASCII spaces, written over the lengths between PLAIN values (see addPlainRows). */
const SPACES = 0x20202020

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
  if (format === 'parquet') return parquetBatches(path, opts)
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

/**
 * A batch filled by copying each record's key and value bytes into its buffer. `take`
 * hands the batch out; the next `add` starts a new one in the same arrays.
 */
class CopiedBatch {
  private readonly batch = newBatch()
  private n = 0
  private used = 0
  private handedOut = false

  constructor() {
    this.batch.buf = Buffer.allocUnsafe(BATCH_BYTES)
  }

  get count(): number {
    return this.handedOut ? 0 : this.n
  }

  /** Whether a record of `size` bytes must wait until this batch is taken. */
  isFullFor(size: number): boolean {
    return !this.handedOut && (this.n === BATCH_RECORDS || (this.n > 0 && this.used + size > this.batch.buf.length))
  }

  add(key: Buffer, value: Buffer, line: number, order: number, keyKind: KeyKind, valueKind: ValueKind): void {
    const b = this.batch
    this.reopenIfTaken()
    const size = key.length + value.length
    if (size > b.buf.length) b.buf = Buffer.allocUnsafe(size)
    const n = this.n
    let used = this.used
    key.copy(b.buf, used)
    b.keyStart[n] = used
    used += key.length
    b.keyEnd[n] = used
    value.copy(b.buf, used)
    b.valueStart[n] = used
    used += value.length
    b.valueEnd[n] = used
    b.line[n] = line
    b.order[n] = order
    b.kinds.keys[keyKind]++
    b.kinds.values[valueKind]++
    this.n = n + 1
    this.used = used
  }

  /**
   * Copies rows [from, to) of a span of PLAIN pages (at most what fits): per column one
   * range of the page, the 4-byte lengths between the values included, then each row's
   * offsets. Stops before a row that is null or whose key is out of bounds, and returns
   * the row after the last one taken (`from` when none was). Text columns are checked with
   * one isUtf8 over the copied range once the lengths in it are blanked to spaces: then
   * the range is valid UTF-8 exactly when every value in it is, since a space cannot
   * continue a multi-byte sequence. A range that fails is taken again row by row through
   * `span.bytes`, which throws the error naming the first bad row.
   */
  addPlainRows(span: ParquetRowSpan, runs: PlainRuns, from: number, to: number): number {
    const b = this.batch
    this.reopenIfTaken()
    const { key: K, value: V } = runs
    const n = this.n
    const used = this.used
    const room = b.buf.length - used
    const max = Math.min(to - from, BATCH_RECORDS - n)
    const k0 = from - K.rowStart
    const v0 = from - V.rowStart
    const kBase = K.starts[k0]!
    const vBase = V.starts[v0]!
    let m = 0
    for (; m < max; m++) {
      const ks = K.starts[k0 + m]!
      const vs = V.starts[v0 + m]!
      if (ks < 0 || vs < 0) break
      const keyLength = K.ends[k0 + m]! - ks
      if (keyLength === 0 || keyLength > MAX_KEY_BYTES) break
      if (K.ends[k0 + m]! - kBase + (V.ends[v0 + m]! - vBase) > room) break
    }
    if (m === 0) return from
    const kEnd = K.ends[k0 + m - 1]!
    const vEnd = V.ends[v0 + m - 1]!
    const buf = b.buf
    buf.set(K.buf.subarray(kBase, kEnd), used)
    const keyShift = used - kBase
    const valueAt = used + (kEnd - kBase)
    buf.set(V.buf.subarray(vBase, vEnd), valueAt)
    const valueShift = valueAt - vBase
    for (let j = 0; j < m; j++) {
      const ks = K.starts[k0 + j]! + keyShift
      const vs = V.starts[v0 + j]! + valueShift
      b.keyStart[n + j] = ks
      b.keyEnd[n + j] = K.ends[k0 + j]! + keyShift
      b.valueStart[n + j] = vs
      b.valueEnd[n + j] = V.ends[v0 + j]! + valueShift
      b.line[n + j] = span.base + from + j
      b.order[n + j] = span.base + from + j
      if (j > 0) {
        buf.writeUInt32LE(SPACES, ks - 4)
        buf.writeUInt32LE(SPACES, vs - 4)
      }
    }
    if (
      (runs.keyUtf8 && !isUtf8(buf.subarray(used, valueAt))) ||
      (runs.valueUtf8 && !isUtf8(buf.subarray(valueAt, valueAt + (vEnd - vBase))))
    ) {
      for (let row = from; row < from + m; row++) span.bytes(row)
      throw new Error(`parquet rows ${span.base + from}..${span.base + from + m - 1}: text failed a UTF-8 check no row fails`)
    }
    b.kinds.keys[span.keyKind] += m
    b.kinds.values[span.valueKind] += m
    this.n = n + m
    this.used = valueAt + (vEnd - vBase)
    return from + m
  }

  /** After take(), the next record starts a new batch in the same arrays. */
  private reopenIfTaken(): void {
    if (!this.handedOut) return
    this.handedOut = false
    this.n = 0
    this.used = 0
    clearKinds(this.batch.kinds)
  }

  take(): RecordBatch {
    this.batch.count = this.n
    this.handedOut = true
    return this.batch
  }
}

/** Any format: records from its reader, key and value bytes copied into the batch buffer. */
async function* copiedBatches(path: string, format: InputFormat, opts: ReadOptions): AsyncGenerator<RecordBatch> {
  const batch = new CopiedBatch()
  for await (const rec of readInput(path, format, opts)) {
    if (batch.isFullFor(rec.key.length + rec.value.length)) yield batch.take()
    batch.add(rec.key, rec.value, rec.source.line ?? rec.source.row ?? 0, rec.order, rec.keyKind, rec.valueKind)
  }
  if (batch.count > 0) yield batch.take()
}

/**
 * Parquet: the rows of each decoded span copied straight into the batch, with no record
 * object and no await per row (the record reader's async step per row was most of its cost).
 * The columnar reader is loaded on first use, as readInput does.
 */
async function* parquetBatches(path: string, opts: ReadOptions): AsyncGenerator<RecordBatch> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { readParquetSpans } = require('./parquet') as typeof import('./parquet')
  const batch = new CopiedBatch()
  // Every row is copied into the batch before the reader moves on: it may reuse its pages.
  for await (const span of readParquetSpans(path, opts, 'reuse-pages')) {
    opts.signal?.throwIfAborted()
    let from = span.from
    if (span.runs !== undefined) {
      while (from < span.to) {
        const next = batch.addPlainRows(span, span.runs, from, span.to)
        if (next > from) {
          from = next
          continue
        }
        // Nothing fit: hand the batch out, or take the row one by one (a null, a bad key,
        // or a row larger than an empty batch's buffer).
        if (batch.count > 0) {
          yield batch.take()
          continue
        }
        const [key, value] = span.bytes(from)
        batch.add(key, value, span.base + from, span.base + from, span.keyKind, span.valueKind)
        from++
      }
      continue
    }
    for (let row = from; row < span.to; row++) {
      const [key, value] = span.bytes(row)
      // The span's bytes stay valid while this generator is suspended: its columns only
      // move on when the next span is pulled.
      if (batch.isFullFor(key.length + value.length)) yield batch.take()
      batch.add(key, value, span.base + row, span.base + row, span.keyKind, span.valueKind)
    }
  }
  if (batch.count > 0) yield batch.take()
}
