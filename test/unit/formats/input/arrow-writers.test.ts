import { join } from 'node:path'
import { readArrow } from '../../../../formats/input/arrow'
import { readParquet } from '../../../../formats/input/parquet'
import { planSplits } from '../../../../formats/input/splits'
import type { InputRecord } from '../../../../formats/input/types'
import { trickyRows } from '../../../../testkit/stores/parquet-fixtures'
import { writeWithPyarrow, type PyarrowOutput } from '../../../../testkit/stores/pyarrow-fixtures'
import { collect, tempDir } from './helpers'

/**
 * Arrow IPC files and streams, and Parquet with data pages v2, written by pyarrow (Arrow
 * C++): every value read back exactly.
 */
jest.setTimeout(300_000)
const dir = tempDir()
const rows = trickyRows(3000)
const hex = (b: Buffer): string => b.toString('hex')
let seq = 0

function expectEveryValue(recs: readonly InputRecord[]): void {
  expect(recs.length).toBe(rows.length)
  recs.forEach((rec, i) => {
    const r = rows[i]!
    if (rec.key.toString('utf8') !== r.key || rec.value.toString('utf8') !== (r.value ?? '') || rec.order !== i) {
      throw new Error(
        `row ${i}: read ${JSON.stringify([rec.key.toString(), rec.value.toString(), rec.order])}, written ${JSON.stringify([r.key, r.value])}`,
      )
    }
  })
}

const arrowCases: Array<[string, PyarrowOutput]> = []
for (const kind of ['arrow-file', 'arrow-stream'] as const)
  for (const dictionary of [false, true])
    for (const large of [false, true])
      arrowCases.push([
        `${kind}${dictionary ? ', dictionary' : ''}${large ? ', large types' : ''}`,
        { kind, dictionary, large, batchRows: 700 },
      ])
arrowCases.push(['arrow-file, LZ4 frame bodies', { kind: 'arrow-file', compression: 'lz4', batchRows: 700 }])
arrowCases.push(['arrow-stream, ZSTD bodies', { kind: 'arrow-stream', compression: 'zstd', batchRows: 700 }])

describe.each(arrowCases)('pyarrow %s', (_name, spec) => {
  let path: string
  beforeAll(() => {
    path = writeWithPyarrow(join(dir, `a${seq++}.arrow`), rows, spec)
  })

  it('key and value: every value, NULL values as empty', async () => {
    expectEveryValue(await collect(readArrow(path)))
  })

  it('binary, dictionary and Int64 columns', async () => {
    const bins = await collect(readArrow(path, { valueField: 'bin' }))
    expect(bins.map((r) => [hex(r.value), r.valueKind])).toEqual(rows.map((r) => [r.bin === null ? '' : hex(r.bin), 'bytes']))
    const colors = await collect(readArrow(path, { keyField: 'n', valueField: 'color' }))
    expect(colors.map((r) => [r.key.toString(), r.value.toString(), r.valueKind])).toEqual(
      rows.map((r) => [String(r.n), r.color ?? '', 'string']),
    )
  })

  it('record batch splits of a file read exactly what one reader reads', async () => {
    const splits = await planSplits([path], 'arrow', 1)
    expect(splits.length).toBe(spec.kind === 'arrow-file' ? 5 : 1)
    const parts: InputRecord[] = []
    for (const s of splits) parts.push(...(await collect(readArrow(s.path, { groupStart: s.groupStart, groupEnd: s.groupEnd }))))
    expectEveryValue(parts)
  })
})

describe.each(['snappy', 'gzip', 'brotli', 'zstd', 'lz4', 'none'])('pyarrow Parquet, data pages v2, %s', (codec) => {
  it('every value, also through row-group splits', async () => {
    const path = writeWithPyarrow(join(dir, `p${seq++}.parquet`), rows, {
      kind: 'parquet',
      codec,
      dataPageVersion: '2.0',
      rowGroupSize: 1000,
    })
    expectEveryValue(await collect(readParquet(path)))
    const parts: InputRecord[] = []
    for (const s of await planSplits([path], 'parquet', 1))
      parts.push(...(await collect(readParquet(s.path, { groupStart: s.groupStart, groupEnd: s.groupEnd }))))
    expectEveryValue(parts)
    const n = await collect(readParquet(path, { valueField: 'n' }))
    expect(n.map((r) => r.value.toString())).toEqual(rows.map((r) => String(r.n)))
  })
})

it('pyarrow Parquet with DELTA_BYTE_ARRAY, DELTA_LENGTH_BYTE_ARRAY and DELTA_BINARY_PACKED columns', async () => {
  const path = writeWithPyarrow(join(dir, `p${seq++}.parquet`), rows, {
    kind: 'parquet',
    codec: 'zstd',
    dataPageVersion: '2.0',
    columnEncoding: { key: 'DELTA_BYTE_ARRAY', value: 'DELTA_LENGTH_BYTE_ARRAY', n: 'DELTA_BINARY_PACKED' },
  })
  expectEveryValue(await collect(readParquet(path)))
  expect((await collect(readParquet(path, { valueField: 'n' }))).map((r) => r.value.toString())).toEqual(rows.map((r) => String(r.n)))
})
