import { join } from 'node:path'
import { readArrow } from '../../../../formats/input/arrow'
import { ensurePython, runPython } from '../../../../testkit/peers/python'
import { collect, tempDir } from './helpers'

/**
 * Known answers for Arrow types written by pyarrow (Arrow C++): the same text forms as
 * Parquet columns (docs/INPUTS.md). Row 0 ordinary, row 1 extremes, row 2 NULL.
 */
jest.setTimeout(300_000)
const dir = tempDir()

const SCRIPT = String.raw`
import sys, datetime, decimal, uuid
import pyarrow as pa, pyarrow.ipc as ipc
utc = datetime.timezone.utc
cols = {
  'key': pa.array(['a', 'b', 'c']),
  'u64': pa.array([18446744073709551615, 0, None], pa.uint64()),
  'i64': pa.array([-9223372036854775808, 1, None], pa.int64()),
  'f32': pa.array([0.1, -1.5, None], pa.float32()),
  'dec': pa.array([decimal.Decimal('1.50'), decimal.Decimal('-0.05'), None], pa.decimal128(4, 2)),
  'd': pa.array([datetime.date(2024, 6, 1), datetime.date(1969, 12, 31), None], pa.date32()),
  'tsus': pa.array([datetime.datetime(2024, 6, 1, 12, 34, 56, 123456), datetime.datetime(1900, 1, 1), None], pa.timestamp('us')),
  'tstz': pa.array([datetime.datetime(2024, 6, 1, 12, 34, 56, 500000, tzinfo=utc), datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=utc), None], pa.timestamp('us', tz='UTC')),
  'tsns': pa.array([1717245296123456789, 1, None], pa.timestamp('ns')),
  'tm': pa.array([datetime.time(1, 2, 3, 500000), datetime.time(23, 59, 59, 999999), None], pa.time64('us')),
  'flag': pa.array([True, False, None]),
  'bin': pa.array([b'\x00\xffab', b'', None], pa.large_binary()),
  'st': pa.array([{'n': 1, 's': 'x'}, {'n': 2, 's': 'y'}, None]),
  'li': pa.array([[1, None, 2], [], None], pa.list_(pa.int32())),
}
table = pa.table(cols)
with ipc.new_file(sys.argv[1], table.schema) as w: w.write_table(table)
`

const EXPECTED: Record<string, { kind: string; values: [string, string, string] }> = {
  u64: { kind: 'json', values: ['18446744073709551615', '0', 'null'] },
  i64: { kind: 'json', values: ['-9223372036854775808', '1', 'null'] },
  f32: { kind: 'json', values: ['0.1', '-1.5', 'null'] },
  dec: { kind: 'json', values: ['1.50', '-0.05', 'null'] },
  d: { kind: 'string', values: ['2024-06-01', '1969-12-31', ''] },
  tsus: { kind: 'string', values: ['2024-06-01T12:34:56.123456', '1900-01-01T00:00:00.000000', ''] },
  tstz: { kind: 'string', values: ['2024-06-01T12:34:56.500000Z', '1969-12-31T23:59:59.999999Z', ''] },
  tsns: { kind: 'string', values: ['2024-06-01T12:34:56.123456789', '1970-01-01T00:00:00.000000001', ''] },
  tm: { kind: 'string', values: ['01:02:03.500000', '23:59:59.999999', ''] },
  flag: { kind: 'json', values: ['true', 'false', 'null'] },
  st: { kind: 'json', values: ['{"n":1,"s":"x"}', '{"n":2,"s":"y"}', 'null'] },
  li: { kind: 'json', values: ['[1,null,2]', '[]', 'null'] },
}

let path: string
beforeAll(() => {
  path = join(dir, 'typed.arrow')
  runPython(ensurePython(['pyarrow']), SCRIPT, [path])
})

it.each(Object.keys(EXPECTED))('column %s: value bytes and kind; NULL is the empty value of the kind', async (column) => {
  const recs = await collect(readArrow(path, { valueField: column }))
  expect(recs.map((r) => [r.key.toString(), r.value.toString('utf8'), r.valueKind])).toEqual(
    ['a', 'b', 'c'].map((k, i) => [k, EXPECTED[column]!.values[i], EXPECTED[column]!.kind]),
  )
})

it('large binary values are bytes, NULL as zero bytes', async () => {
  const recs = await collect(readArrow(path, { valueField: 'bin' }))
  expect(recs.map((r) => [r.value.toString('hex'), r.valueKind])).toEqual([
    ['00ff6162', 'bytes'],
    ['', 'bytes'],
    ['', 'bytes'],
  ])
})

it.each(['u64', 'dec', 'd', 'tstz', 'tsns'])('column %s as a key gives its text', async (column) => {
  const records = readArrow(path, { keyField: column, valueField: 'key' })
  const first = await records.next()
  await records.return(undefined)
  expect([first.value?.key.toString('utf8'), first.value?.keyKind]).toEqual([EXPECTED[column]!.values[0], 'string'])
})
