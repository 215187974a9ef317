import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isStoreError } from '../../../../common/errors'
import { BATCH_RECORDS, readRecordBatches } from '../../../../formats/input/record-batch'
import { readInput } from '../../../../formats/input/read-input'
import { INPUT_FORMATS, type InputFormat, type ReadOptions } from '../../../../formats/input/types'
import { writeInput as writeRecords } from '../../../../testkit/stores/input-files'
import { tempDir, writeInput } from './helpers'
import { writeParquet } from './write-parquet'

/** The builder's batch reader gives exactly the records, positions and kinds of the record readers. */
const dir = tempDir()
let seq = 0

interface Flat {
  key: string
  value: string
  line: number
  order: number
}

async function viaRecords(path: string, format: InputFormat, opts: ReadOptions = {}): Promise<{ recs: Flat[]; kinds: string[] }> {
  const recs: Flat[] = []
  const kinds: string[] = []
  for await (const r of readInput(path, format, opts)) {
    recs.push({ key: r.key.toString('hex'), value: r.value.toString('hex'), line: r.source.line ?? r.source.row ?? 0, order: r.order })
    kinds.push(`${r.keyKind}/${r.valueKind}`)
  }
  return { recs, kinds: [...new Set(kinds)].sort() }
}

async function viaBatches(
  path: string,
  format: InputFormat,
  opts: ReadOptions = {},
): Promise<{ recs: Flat[]; kinds: string[]; batches: number }> {
  const recs: Flat[] = []
  const kinds = new Set<string>()
  let batches = 0
  for await (const b of readRecordBatches(path, format, opts)) {
    batches++
    expect(b.count).toBeGreaterThan(0)
    expect(b.count).toBeLessThanOrEqual(BATCH_RECORDS)
    for (let i = 0; i < b.count; i++) {
      recs.push({
        key: b.buf.subarray(b.keyStart[i], b.keyEnd[i]).toString('hex'),
        value: b.buf.subarray(b.valueStart[i], b.valueEnd[i]).toString('hex'),
        line: b.line[i]!,
        order: b.order[i]!,
      })
    }
    let tallied = 0
    for (const [k, n] of Object.entries(b.kinds.keys))
      for (const [v, m] of Object.entries(b.kinds.values)) if (n > 0 && m > 0) kinds.add(`${k}/${v}`)
    for (const n of Object.values(b.kinds.keys)) tallied += n
    expect(tallied).toBe(b.count)
  }
  return { recs, kinds: [...kinds].sort(), batches }
}

/** The message of the input error `run` must end with. */
async function messageOf(run: () => Promise<unknown>): Promise<string> {
  try {
    await run()
  } catch (err) {
    expect(isStoreError(err)).toBe(true)
    return (err as Error).message
  }
  throw new Error('expected an error')
}

function records(n: number): [string, string][] {
  return Array.from({ length: n }, (_, i) => [`k${i}-${'x'.repeat(i % 40)}`, i % 11 === 0 ? '' : `v${i} ${'é'.repeat(i % 5)}`])
}

test.each(INPUT_FORMATS)('%s: the same records, lines, orders and kinds as readInput, over several batches', async (format) => {
  const path = join(dir, `${seq++}-in.${format}`)
  await writeRecords(path, format, records(BATCH_RECORDS * 2 + 17))
  const want = await viaRecords(path, format)
  const got = await viaBatches(path, format)
  expect(got.recs).toEqual(want.recs)
  expect(got.kinds).toEqual(want.kinds)
  expect(got.batches).toBeGreaterThanOrEqual(3)
})

test('TSV byte-range splits: each line once, as the record reader reads them', async () => {
  const path = join(dir, `${seq++}-in.tsv`)
  await writeRecords(path, 'tsv', records(3000))
  const cuts = [0, 1, 777, 20000, 20001, 45000, Number.POSITIVE_INFINITY]
  const all: Flat[] = []
  for (let i = 0; i + 1 < cuts.length; i++) {
    const opts = { start: cuts[i], end: cuts[i + 1] === Number.POSITIVE_INFINITY ? undefined : cuts[i + 1] }
    const got = await viaBatches(path, 'tsv', opts)
    expect(got.recs).toEqual((await viaRecords(path, 'tsv', opts)).recs)
    all.push(...got.recs)
  }
  expect(all).toEqual((await viaRecords(path, 'tsv')).recs)
})

test('TSV lines longer than the reused 1 MiB read buffer, across its boundaries', async () => {
  const long = (c: string, n: number): string => c.repeat(n)
  const lines = [`a\t${long('1', 3 << 20)}`, 'b\tshort', `c\t${long('2', (1 << 20) - 5)}`, `${long('k', 60000)}\tv`, 'd\t']
  const path = writeInput(dir, 'long.tsv', `${lines.join('\n')}\n`)
  const got = await viaBatches(path, 'tsv')
  expect(got.recs).toEqual((await viaRecords(path, 'tsv')).recs)
  expect(got.recs.map((r) => Buffer.from(r.value, 'hex').length)).toEqual([3 << 20, 5, (1 << 20) - 5, 1, 0])
})

test('TSV with --key-field/--value-field goes through the record reader, same records', async () => {
  const path = writeInput(dir, 'cols.tsv', 'a\tb\tc\nd\te\tf\n')
  const opts = { keyField: '2', valueField: '3' }
  expect((await viaBatches(path, 'tsv', opts)).recs).toEqual((await viaRecords(path, 'tsv', opts)).recs)
})

test.each([
  ['no tab', 'a\tb\nnotab\n', /:2: no tab separator/],
  ['empty key', 'a\tb\n\tvalue\n', /:2: /],
  ['blank line before data', 'a\tb\n\nc\td\n', /:2: empty line/],
  ['invalid UTF-8', Buffer.concat([Buffer.from('a\tb\nc\t'), Buffer.from([0xff]), Buffer.from('\n')]), /:2: invalid UTF-8/],
])('TSV errors name the file and line as readTsv does: %s', async (_name, content, message) => {
  const path = writeInput(dir, 'bad.tsv', content)
  const fromBatches = await messageOf(() => viaBatches(path, 'tsv'))
  expect(fromBatches).toMatch(message)
  expect(fromBatches).toContain(path)
  expect(fromBatches).toBe(await messageOf(() => viaRecords(path, 'tsv')))
})

describe('Parquet straight into batches (no record objects)', () => {
  const rows = Array.from({ length: 9000 }, (_, i) => ({ key: `k${i}`, value: i % 7 === 0 ? null : `v${i}-${'y'.repeat(i % 300)}` }))

  test('same records across row groups, and each row-group split gives its rows once', async () => {
    const path = await writeParquet(join(dir, `${seq++}.parquet`), { key: 'VARCHAR', value: 'VARCHAR' }, rows, { rowGroupSize: 2048 })
    const want = await viaRecords(path, 'parquet')
    expect(want.recs).toHaveLength(rows.length)
    expect((await viaBatches(path, 'parquet')).recs).toEqual(want.recs)
    const parts: Flat[] = []
    for (const [groupStart, groupEnd] of [
      [0, 1],
      [1, 3],
      [3, 5],
    ] as const) {
      const opts = { groupStart, groupEnd }
      const got = await viaBatches(path, 'parquet', opts)
      expect(got.recs).toEqual((await viaRecords(path, 'parquet', opts)).recs)
      parts.push(...got.recs)
    }
    expect(parts).toEqual(want.recs)
  })

  test('PLAIN text pages are taken as runs of rows: binary values, empty keys, a value past the batch buffer, same as readInput', async () => {
    const many = Array.from({ length: 7000 }, (_, i) => ({
      key: `k${i}`,
      value: i === 3000 ? 'z'.repeat(1_500_000) : `v${i}-${'é'.repeat(i % 9)}`,
      blob: Buffer.from([0xff, i & 0xff, 0x00, 0xc3]),
    }))
    const path = await writeParquet(join(dir, `${seq++}.parquet`), { key: 'VARCHAR', value: 'VARCHAR', blob: 'BLOB' }, many, {
      rowGroupSize: 4096,
    })
    // The run path is taken (DuckDB writes these columns PLAIN): otherwise this test would
    // only compare the per-row path with itself.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { readParquetSpans } = require('../../../../formats/input/parquet') as typeof import('../../../../formats/input/parquet')
    let spans = 0
    let runs = 0
    for await (const span of readParquetSpans(path, {})) {
      spans++
      if (span.runs !== undefined) runs++
    }
    expect(runs).toBe(spans)
    for (const opts of [{}, { valueField: 'blob' }]) {
      const want = await viaRecords(path, 'parquet', opts)
      expect(want.recs).toHaveLength(many.length)
      expect((await viaBatches(path, 'parquet', opts)).recs).toEqual(want.recs)
    }
    const empty = many.map((r, i) => (i === 5000 ? { ...r, key: '' } : r))
    const bad = await writeParquet(join(dir, `${seq++}.parquet`), { key: 'VARCHAR', value: 'VARCHAR' }, empty, { rowGroupSize: 4096 })
    const message = await messageOf(() => viaBatches(bad, 'parquet'))
    expect(message).toBe(`${bad}: row 5000: empty key`)
    expect(message).toBe(await messageOf(() => viaRecords(bad, 'parquet')))
  })

  test('invalid UTF-8 inside a run: the row is named, even where the next length byte would complete the sequence', async () => {
    // Row 500 ends in 0xc3 (a lead byte without its continuation); row 501's value is 169
    // bytes long, so its length starts with 0xa9: together, c3 a9 would be a valid "é".
    const texts = Array.from({ length: 2000 }, (_, i) => ({
      key: `k${i}`,
      value: i === 500 ? 'MARK-é' : i === 501 ? 'w'.repeat(169) : i === 1500 ? 'MID-é-x' : `v${i}`,
    }))
    const good = await writeParquet(join(dir, `${seq++}.parquet`), { key: 'VARCHAR', value: 'VARCHAR' }, texts, { codec: 'uncompressed' })
    const corrupt = (marker: string, fix: (bytes: Buffer, at: number) => void, name: string): string => {
      const bytes = readFileSync(good)
      fix(bytes, bytes.indexOf(Buffer.from(marker)) + Buffer.byteLength(marker) - 2)
      const path = join(dir, name)
      writeFileSync(path, bytes)
      return path
    }
    // 'MARK-é' -> 'MARK-A' + 0xc3: the value ends inside a character.
    const atEnd = corrupt('MARK-é', (b, at) => ((b[at] = 0x41), (b[at + 1] = 0xc3)), `${seq++}-end.parquet`)
    const endMessage = await messageOf(() => viaBatches(atEnd, 'parquet'))
    expect(endMessage).toBe(`${atEnd}: row 500: invalid UTF-8 in STRING column 'value'`)
    expect(endMessage).toBe(await messageOf(() => viaRecords(atEnd, 'parquet')))
    // 'MID-é-x' -> 0xc3 0x28: invalid in the middle of a value.
    const inside = corrupt('MID-é', (b, at) => (b[at + 1] = 0x28), `${seq++}-mid.parquet`)
    const midMessage = await messageOf(() => viaBatches(inside, 'parquet'))
    expect(midMessage).toBe(`${inside}: row 1500: invalid UTF-8 in STRING column 'value'`)
    expect(midMessage).toBe(await messageOf(() => viaRecords(inside, 'parquet')))
  })

  test('a null key deep in the file: the same error, naming the row', async () => {
    const bad = rows.map((r, i) => (i === 6000 ? { value: 'orphan' } : r))
    const path = await writeParquet(join(dir, `${seq++}.parquet`), { key: 'VARCHAR', value: 'VARCHAR' }, bad, { rowGroupSize: 2048 })
    const fromBatches = await messageOf(() => viaBatches(path, 'parquet'))
    expect(fromBatches).toBe(`${path}: row 6000: key column 'key' is null`)
    expect(fromBatches).toBe(await messageOf(() => viaRecords(path, 'parquet')))
  })
})
