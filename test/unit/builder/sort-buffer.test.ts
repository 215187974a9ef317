import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { nativeFunctions } from '../../../common/native'
import { mulberry32 } from '../../../common/prng'
import { SortBuffer } from '../../../builder/sort-buffer'
import type { RecordBatch } from '../../../formats/input/record-batch'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * SortBuffer.addEntries packs a batch's records in one call into the addon, with addRaw per
 * entry as its JavaScript twin: both must stop at the same entry when the buffer is full and
 * leave the same bytes, so a build's sorted runs (and its output) do not depend on the addon.
 */
const tmp = makeTmp('rostore-sortbuf-')
afterAll(tmp.cleanup)

function batchOf(n: number, seed: number): { batch: RecordBatch; hashes: Uint8Array } {
  const next = mulberry32(seed)
  const rand = (): number => next() / 2 ** 32
  const parts: Buffer[] = []
  const keyStart = new Uint32Array(n)
  const keyEnd = new Uint32Array(n)
  const valueStart = new Uint32Array(n)
  const valueEnd = new Uint32Array(n)
  let at = 0
  for (let i = 0; i < n; i++) {
    const key = Buffer.from(`key-${i}-${'k'.repeat(Math.floor(rand() * 40))}`)
    // Empty values, short ones and a few larger than the header.
    const value = Buffer.alloc(i % 17 === 0 ? 0 : Math.floor(rand() * (i % 5 === 0 ? 3000 : 120)), i & 0xff)
    keyStart[i] = at
    keyEnd[i] = at + key.length
    valueStart[i] = keyEnd[i]! + 1
    valueEnd[i] = valueStart[i]! + value.length
    parts.push(key, Buffer.from('\t'), value)
    at = valueEnd[i]!
  }
  const hashes = new Uint8Array(16 * n)
  for (let i = 0; i < hashes.length; i++) hashes[i] = Math.floor(rand() * 256)
  // Ties on the first 8 hash bytes, so the sort reads the arena's tails too.
  hashes.copyWithin(16 * 7, 16 * 3, 16 * 3 + 8)
  const batch: RecordBatch = {
    buf: Buffer.concat(parts),
    count: n,
    keyStart,
    keyEnd,
    valueStart,
    valueEnd,
    line: Float64Array.from({ length: n }, (_, i) => i + 1),
    order: Float64Array.from({ length: n }, (_, i) => keyStart[i]! * 1.5),
    kinds: { keys: { string: n, bytes: 0 }, values: { string: 0, json: 0, bytes: n } },
  }
  return { batch, hashes }
}

/** Adds every entry (spilling when full) and returns the run files' bytes and the stops. */
function fill(native: boolean, tag: string): { runs: Buffer[]; stops: number[] } {
  const n = 700
  const { batch, hashes } = batchOf(n, 42)
  // Two replicas for every third record.
  const records: number[] = []
  const buckets: number[] = []
  for (let i = 0; i < n; i++) {
    records.push(i)
    buckets.push(i % 4)
    if (i % 3 === 0) {
      records.push(i)
      buckets.push(4 + (i % 4))
    }
  }
  const entryRecord = Uint32Array.from(records)
  const entryBucket = Uint32Array.from(buckets)
  const buf = new SortBuffer(96 << 10, undefined, native)
  const runs: Buffer[] = []
  const stops: number[] = []
  let j = 0
  while (j < entryRecord.length) {
    j = buf.addEntries(batch, hashes, 3, entryRecord, entryBucket, j, entryRecord.length)
    if (j === entryRecord.length) break
    stops.push(j)
    const path = join(tmp.dir, `${tag}-${runs.length}.run`)
    buf.spill(path)
    runs.push(readFileSync(path))
  }
  const path = join(tmp.dir, `${tag}-last.run`)
  const last = buf.spill(path)
  runs.push(readFileSync(path))
  expect(last.segments.every((s) => s.records > 0)).toBe(true)
  return { runs, stops }
}

test('the JavaScript twin fills, stops when full, and spills every entry once', () => {
  const js = fill(false, 'js')
  expect(js.stops.length).toBeGreaterThanOrEqual(2)
  const total = js.runs.reduce((n, r) => n + r.length, 0)
  // Header (48 bytes) + key + value per entry, every entry once.
  const { batch } = batchOf(700, 42)
  let want = 0
  for (let i = 0; i < 700; i++) {
    const size = 48 + (batch.keyEnd[i]! - batch.keyStart[i]!) + (batch.valueEnd[i]! - batch.valueStart[i]!)
    want += i % 3 === 0 ? 2 * size : size
  }
  expect(total).toBe(want)
})

test('the addon packs the same bytes and stops at the same entries (unless ROSTORE_NATIVE=0)', () => {
  if (nativeFunctions() === undefined) {
    expect(process.env['ROSTORE_NATIVE']).toBe('0')
    return
  }
  const js = fill(false, 'twin')
  const native = fill(true, 'native')
  expect(native.stops).toEqual(js.stops)
  expect(native.runs.length).toBe(js.runs.length)
  native.runs.forEach((r, i) => expect(r.equals(js.runs[i]!)).toBe(true))
})

test('the addon refuses ranges outside the batch buffer instead of reading past it', () => {
  const native = nativeFunctions()
  if (native === undefined) return
  const { batch, hashes } = batchOf(4, 7)
  batch.valueEnd[2] = batch.buf.length + 10
  const buf = new SortBuffer(1 << 20, undefined, true)
  expect(() => buf.addEntries(batch, hashes, 0, Uint32Array.of(0, 1, 2, 3), Uint32Array.of(0, 0, 0, 0), 0, 4)).toThrow(/outside src/)
})
