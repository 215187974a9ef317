/**
 * Generated, deterministic benchmark data.
 *
 * Records: key = the record number i (0 ≤ i < N) as 12 ASCII decimal digits, zero-padded
 * ("000000123456"): that is exactly what redis-benchmark's __rand_int__ expands to, so
 * redis-benchmark queries the same keys as our own load generators do. Value = `valueBytes`
 * random printable ASCII bytes (0x20..0x7e, never tab or newline), a pure function of
 * (seed, i), so any value can be recomputed to check an answer. The input file lists the
 * records in a seeded random order (a Fisher–Yates permutation), as an export from another
 * system would: no engine gets presorted input for free.
 *
 * Lookup streams (also seeded):
 * - uniform: 90% keys drawn uniformly from the N present ones, 10% absent keys (numbers in
 *   N..2N-1, same 12-digit form);
 * - zipf: Zipf(s = 0.99) over ranks 1..N, rank r mapped to key perm[r-1] of an independent
 *   permutation (hot keys are scattered over the key space); every key present.
 */
import { mulberry32 } from '../../common/prng'
import {
  closeSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../../common/paths'
import type { InputFormat } from '../../formats/input/types'

export const KEY_DIGITS = 12
export const DEFAULT_SEED = 20240607

/** One data shape, as in Voldemort's published read-only benchmark. */
export interface Shape {
  readonly name: string
  readonly records: number
  readonly valueBytes: number
}

export function shapes(records: number): Shape[] {
  return [
    { name: `${label(records)} × 100 B`, records, valueBytes: 100 },
    { name: `${label(records)} × 1024 B`, records, valueBytes: 1024 },
  ]
}

/** 100000 → "100k", 1000000 → "1M". */
export function label(n: number): string {
  if (n >= 1e6 && n % 1e5 === 0) return `${n / 1e6}M`
  if (n >= 1e3 && n % 100 === 0) return `${n / 1e3}k`
  return String(n)
}

/** "100k", "1M", "10m", "2500000" → a positive integer count. */
export function parseCount(text: string): number {
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(text.trim())
  if (!m) throw new Error(`not a record count: ${JSON.stringify(text)} (examples: 100k, 1M, 10M)`)
  const mult = m[2] === '' ? 1 : m[2]?.toLowerCase() === 'k' ? 1e3 : 1e6
  const n = Math.round(Number(m[1]) * mult)
  if (!(n >= 1)) throw new Error(`record count must be at least 1: ${text}`)
  return n
}

// ---------------------------------------------------------------------------------------
// PRNG

/** A float in [0, 1) from a uint32 PRNG. */
export function unit(next: () => number): number {
  return next() / 0x100000000
}

/** Uniform integer in [0, n) (n ≤ 2^32; multiply-high, bias ≤ n/2^32). */
export function below(next: () => number, n: number): number {
  return Math.floor((next() / 0x100000000) * n)
}

/** splitmix-style mix of two 32-bit words: per-record seeds. */
export function mix(a: number, b: number): number {
  let h = (a ^ Math.imul(b, 0x9e3779b1)) >>> 0
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

/** A seeded random permutation of 0..n-1 (Fisher–Yates). */
export function permutation(n: number, seed: number): Uint32Array {
  const p = new Uint32Array(n)
  for (let i = 0; i < n; i++) p[i] = i
  const next = mulberry32(seed)
  for (let i = n - 1; i > 0; i--) {
    const j = below(next, i + 1)
    const t = p[i] as number
    p[i] = p[j] as number
    p[j] = t
  }
  return p
}

// ---------------------------------------------------------------------------------------
// records

export function keyOf(i: number): string {
  return String(i).padStart(KEY_DIGITS, '0')
}

/** Writes the 12 key digits of record i into `out` at `at`. */
export function writeKey(out: Buffer, at: number, i: number): void {
  let v = i
  for (let d = KEY_DIGITS - 1; d >= 0; d--) {
    out[at + d] = 0x30 + (v % 10)
    v = Math.floor(v / 10)
  }
}

/** Writes the value of record i (len printable bytes) into `out` at `at`. */
export function writeValue(out: Buffer, at: number, i: number, len: number, seed: number): void {
  const next = mulberry32(mix(seed, i))
  let k = 0
  while (k < len) {
    // 95^4 < 2^32: four printable bytes per draw.
    let r = next()
    for (let j = 0; j < 4 && k < len; j++, k++) {
      out[at + k] = 0x20 + (r % 95)
      r = Math.floor(r / 95)
    }
  }
}

export function valueOf(i: number, len: number, seed = DEFAULT_SEED): Buffer {
  const b = Buffer.allocUnsafe(len)
  writeValue(b, 0, i, len, seed)
  return b
}

/** Everything that determines a data set's bytes. */
export interface Dataset {
  readonly shape: Shape
  readonly seed: number
  /** The TSV input: key<TAB>value<LF> per record, in `order`. */
  readonly tsv: string
  readonly bytes: number
  /** Bytes of keys and values only (what "MB" of a store means in the tables). */
  readonly payloadBytes: number
}

export function workRoot(): string {
  return process.env.ROSTORE_BENCH_WORK ?? join(packageRoot(__dirname), 'bench', 'work')
}

export function ensureDir(dir: string): string {
  mkdirSync(dir, { recursive: true })
  return dir
}

export function datasetId(shape: Shape, seed: number): string {
  return `n${shape.records}-v${shape.valueBytes}-s${seed}`
}

/** The file order of the records: a seeded permutation of 0..N-1. */
export function fileOrder(shape: Shape, seed: number): Uint32Array {
  return permutation(shape.records, mix(seed, 0x5eed))
}

/**
 * Calls `emit(i, rec, keyAt, valueAt)` for each record in file order with a buffer holding
 * key and value; the buffer is reused, copy what you keep.
 */
export function forEachRecord(shape: Shape, seed: number, emit: (i: number, rec: Buffer) => void): void {
  const order = fileOrder(shape, seed)
  const rec = Buffer.allocUnsafe(KEY_DIGITS + shape.valueBytes)
  for (let n = 0; n < order.length; n++) {
    const i = order[n] as number
    writeKey(rec, 0, i)
    writeValue(rec, KEY_DIGITS, i, shape.valueBytes, seed)
    emit(i, rec)
  }
}

/**
 * Writes `path` once from per-record encodings (reused when `path` exists and its
 * `.params.json` matches): the TSV input and the peers' native inputs are all made here.
 */
export function writeDerived(
  path: string,
  params: Record<string, unknown>,
  shape: Shape,
  seed: number,
  encode: (rec: Buffer, out: Buffer, at: number) => number,
  maxRecordBytes: number,
  trailer?: Buffer,
): number {
  const paramFile = `${path}.params.json`
  const want = JSON.stringify(params)
  if (existsSync(path) && existsSync(paramFile) && readFileSync(paramFile, 'utf8') === want) return statSync(path).size
  const tmp = `${path}.tmp-${process.pid}`
  const fd = openSync(tmp, 'w')
  const out = Buffer.allocUnsafe(Math.max(8 << 20, maxRecordBytes * 2))
  let at = 0
  let total = 0
  try {
    forEachRecord(shape, seed, (_i, rec) => {
      if (at + maxRecordBytes > out.length) {
        writeSync(fd, out, 0, at)
        total += at
        at = 0
      }
      at += encode(rec, out, at)
    })
    if (trailer) {
      if (at + trailer.length > out.length) {
        writeSync(fd, out, 0, at)
        total += at
        at = 0
      }
      at += trailer.copy(out, at)
    }
    writeSync(fd, out, 0, at)
    total += at
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, path)
  writeFileSync(paramFile, want)
  return total
}

/** The TSV input of a shape, generated once under work/data and reused. */
export function ensureDataset(shape: Shape, seed = DEFAULT_SEED): Dataset {
  const dir = ensureDir(join(workRoot(), 'data'))
  const tsv = join(dir, `${datasetId(shape, seed)}.tsv`)
  const recBytes = KEY_DIGITS + 1 + shape.valueBytes + 1
  const bytes = writeDerived(
    tsv,
    { kind: 'tsv', records: shape.records, valueBytes: shape.valueBytes, seed, v: 1 },
    shape,
    seed,
    (rec, out, at) => {
      rec.copy(out, at, 0, KEY_DIGITS)
      out[at + KEY_DIGITS] = 0x09
      rec.copy(out, at + KEY_DIGITS + 1, KEY_DIGITS)
      out[at + recBytes - 1] = 0x0a
      return recBytes
    },
    recBytes,
  )
  return { shape, seed, tsv, bytes, payloadBytes: shape.records * (KEY_DIGITS + shape.valueBytes) }
}

/**
 * Streams the records of a TSV file written by ensureDataset: `emit(key, value)` with the
 * key as a latin1 string and the value as a view into a reused buffer (copy what you keep).
 */
export function forEachTsvRecord(path: string, emit: (key: string, value: Buffer) => void): number {
  const fd = openSync(path, 'r')
  let buf = Buffer.allocUnsafe(16 << 20)
  let have = 0
  let count = 0
  try {
    for (;;) {
      const got = readSync(fd, buf, have, buf.length - have, null)
      const end = have + got
      let s = 0
      for (;;) {
        const nl = buf.indexOf(0x0a, s)
        if (nl < 0 || nl >= end) break
        const tab = buf.indexOf(0x09, s)
        if (tab < 0 || tab > nl) throw new Error(`${path}: line without a tab`)
        emit(buf.toString('latin1', s, tab), buf.subarray(tab + 1, nl))
        count++
        s = nl + 1
      }
      if (got === 0) {
        if (s < end) throw new Error(`${path}: last line has no newline`)
        break
      }
      // Move the partial line to the front; grow when one line fills the buffer.
      buf.copy(buf, 0, s, end)
      have = end - s
      if (have === buf.length) {
        const bigger = Buffer.allocUnsafe(buf.length * 2)
        buf.copy(bigger, 0, 0, have)
        buf = bigger
      }
    }
  } finally {
    closeSync(fd)
  }
  return count
}

// ---------------------------------------------------------------------------------------
// lookup streams

export type StreamKind = 'uniform' | 'zipf'
export const STREAM_KINDS: readonly StreamKind[] = ['uniform', 'zipf']
export const ABSENT_FRACTION = 0.1
export const ZIPF_S = 0.99

/** Record numbers of a lookup stream; numbers ≥ n are absent keys. */
export function streamIds(kind: StreamKind, n: number, count: number, seed: number): Float64Array {
  return kind === 'uniform' ? uniformIds(n, count, seed) : zipfIds(n, count, ZIPF_S, seed)
}

export function streamKeys(kind: StreamKind, n: number, count: number, seed: number): string[] {
  const ids = streamIds(kind, n, count, seed)
  const keys = new Array<string>(ids.length)
  for (let j = 0; j < ids.length; j++) keys[j] = keyOf(ids[j] as number)
  return keys
}

export function uniformIds(n: number, count: number, seed: number): Float64Array {
  const next = mulberry32(mix(seed, 0x0a11))
  const out = new Float64Array(count)
  for (let j = 0; j < count; j++) {
    const absent = unit(next) < ABSENT_FRACTION
    out[j] = absent ? n + below(next, n) : below(next, n)
  }
  return out
}

/** Cumulative Zipf(s) probabilities of ranks 1..n (cdf[n-1] = 1). */
export function zipfCdf(n: number, s: number): Float64Array {
  const cdf = new Float64Array(n)
  let sum = 0
  for (let r = 1; r <= n; r++) {
    sum += 1 / r ** s
    cdf[r - 1] = sum
  }
  for (let r = 0; r < n; r++) cdf[r] = (cdf[r] as number) / sum
  cdf[n - 1] = 1
  return cdf
}

/** Zipf(s) ranks by inverse transform over the CDF, mapped to scattered keys. */
export function zipfIds(n: number, count: number, s: number, seed: number): Float64Array {
  const cdf = zipfCdf(n, s)
  const perm = permutation(n, mix(seed, 0x21bf))
  const next = mulberry32(mix(seed, 0x21c0))
  const out = new Float64Array(count)
  for (let j = 0; j < count; j++) {
    const u = unit(next)
    let lo = 0
    let hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((cdf[mid] as number) < u) lo = mid + 1
      else hi = mid
    }
    out[j] = perm[lo] as number
  }
  return out
}

// ---------------------------------------------------------------------------------------
// the same records in other input formats

/** Input formats the build benchmark derives from a data set's TSV. */
export const DERIVED_INPUTS = ['parquet-snappy', 'parquet-zstd', 'csv', 'jsonl', 'arrow'] as const
/** Also: Parquet as Spark and pyarrow lay it out (1 MiB pages, 128 MiB row groups), written by pyarrow. */
export type DerivedInput = (typeof DERIVED_INPUTS)[number] | 'parquet-pyarrow'

/**
 * The data set's records (same order) as `kind`, written once under work/data by
 * independent writers: DuckDB for Parquet (its default row groups of 122,880 rows), CSV
 * and JSON lines; pyarrow (from the Parquet file) for an Arrow IPC file in batches of
 * 65,536 rows. Reused while its .params.json matches.
 */
export async function ensureDerivedInput(ds: Dataset, kind: DerivedInput): Promise<{ path: string; format: InputFormat; bytes: number }> {
  const ext = kind === 'arrow' ? 'arrow' : kind.startsWith('parquet') ? 'parquet' : (kind as string)
  const path = join(ensureDir(join(workRoot(), 'data')), `${datasetId(ds.shape, ds.seed)}-${kind}.${ext}`)
  const format: InputFormat = kind.startsWith('parquet') ? 'parquet' : (kind as InputFormat)
  const paramFile = `${path}.params.json`
  const want = JSON.stringify({ kind, records: ds.shape.records, valueBytes: ds.shape.valueBytes, seed: ds.seed, v: 1 })
  if (existsSync(path) && existsSync(paramFile) && readFileSync(paramFile, 'utf8') === want)
    return { path, format, bytes: statSync(path).size }
  const tmp = `${path}.tmp-${process.pid}`
  const { duckdb, sqlString } = await import('../../testkit/stores/duckdb')
  const source = `read_csv(${sqlString(ds.tsv)}, delim = '\t', header = false, quote = '', escape = '', columns = {'key': 'VARCHAR', 'value': 'VARCHAR'})`
  // Keep the file order: DuckDB would otherwise be free to reorder a parallel scan.
  await duckdb('SET preserve_insertion_order = true')
  if (kind === 'parquet-snappy' || kind === 'parquet-zstd') {
    await duckdb(
      `COPY (SELECT * FROM ${source}) TO ${sqlString(tmp)} (FORMAT parquet, COMPRESSION ${kind === 'parquet-snappy' ? 'snappy' : 'zstd'})`,
    )
  } else if (kind === 'csv') {
    await duckdb(`COPY (SELECT * FROM ${source}) TO ${sqlString(tmp)} (FORMAT csv, HEADER true)`)
  } else if (kind === 'jsonl') {
    await duckdb(`COPY (SELECT * FROM ${source}) TO ${sqlString(tmp)} (FORMAT json)`)
  } else {
    const parquet = await ensureDerivedInput(ds, 'parquet-snappy')
    const { ensurePython, runPython } = await import('../../testkit/peers/python')
    const script = [
      'import sys, pyarrow.parquet as pq, pyarrow.ipc as ipc',
      'f = pq.ParquetFile(sys.argv[1])',
      'if sys.argv[3] == "arrow":',
      '    w = ipc.new_file(sys.argv[2], f.schema_arrow)',
      'else:',
      '    w = pq.ParquetWriter(sys.argv[2], f.schema_arrow, compression="snappy", data_page_size=1 << 20)',
      'for b in f.iter_batches(batch_size=65536):',
      '    w.write_batch(b, row_group_size=128 << 20) if sys.argv[3] != "arrow" else w.write_batch(b)',
      'w.close()',
    ].join('\n')
    runPython(ensurePython(['pyarrow']), script, [parquet.path, tmp, kind])
  }
  renameSync(tmp, path)
  writeFileSync(paramFile, want)
  return { path, format, bytes: statSync(path).size }
}

/**
 * A TSV of `records` lines `key(i) <TAB> value`, values of `valueBytes` letters and digits
 * from a fixed LCG: the input of the push and partition benches, written streaming (a GB
 * input never sits in memory).
 */
export async function writeSyntheticTsv(
  path: string,
  records: number,
  valueBytes: number,
  key: (i: number) => string = String,
): Promise<void> {
  const out = createWriteStream(path)
  let x = 12345
  const chars = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
  for (let i = 0; i < records; i++) {
    let v = ''
    for (let j = 0; j < valueBytes; j++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0
      v += chars[(x >>> 16) % 62]
    }
    if (!out.write(`${key(i)}\t${v}\n`)) await new Promise<void>((r) => out.once('drain', () => r()))
  }
  await new Promise<void>((resolve, reject) => {
    out.once('error', reject)
    out.end(() => resolve())
  })
}
