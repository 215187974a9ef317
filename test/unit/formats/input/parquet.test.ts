import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readParquet } from '../../../../formats/input/parquet'
import { writeParquetWithDuckdb } from '../../../../testkit/stores/duckdb'
import { collect, expectBadInput, kv, plain, tempDir, writeInput } from './helpers'
import { writeParquet } from './write-parquet'

jest.setTimeout(60_000)
const dir = tempDir()
let seq = 0
const file = (): string => join(dir, `t${seq++}.parquet`)

/**
 * Known answers for the byte conversion of every common type (docs/INPUTS.md): DuckDB
 * writes the literals below; the expected text is derived by hand from the literals.
 * Row 0 is ordinary, row 1 has extremes (negative, before 1970, past 2^53, 38 digits),
 * row 2 is all NULL but the key.
 */
const TYPED = `
  SELECT * FROM (VALUES
    ('a', 42::TINYINT, 200::UTINYINT, (-7)::INTEGER, 123::BIGINT, 18446744073709551615::UBIGINT, 1.50::DECIMAL(4,2),
     0.1::FLOAT, 0.1::DOUBLE, DATE '2024-06-01', TIMESTAMP '2024-06-01 12:34:56.123456', TIMESTAMPTZ '2024-06-01 12:34:56.5+00',
     TIMESTAMP_NS '2024-06-01 12:34:56.123456789', TIMESTAMP_MS '2024-06-01 12:34:56.007', TIME '01:02:03.5',
     '0d3c4c58-5e1b-4a70-9c3e-8f1d2b6a7e90'::UUID, '\\x00\\xFFab'::BLOB, true, 'a'::VARCHAR,
     12345678901234567890123456789.123456789::DECIMAL(38,9)),
    ('b', (-128)::TINYINT, 0::UTINYINT, (-2147483648)::INTEGER, (-9223372036854775808)::BIGINT, 0::UBIGINT, (-0.05)::DECIMAL(4,2),
     (-1.5)::FLOAT, 1e300::DOUBLE, DATE '1969-12-31', TIMESTAMP '1900-01-01 00:00:00', TIMESTAMPTZ '1969-12-31 23:59:59.999999+00',
     TIMESTAMP_NS '1970-01-01 00:00:00.000000001', TIMESTAMP_MS '2262-04-11 23:47:16.854', TIME '23:59:59.999999',
     '00000000-0000-0000-0000-000000000000'::UUID, ''::BLOB, false, ''::VARCHAR,
     (-0.000000001)::DECIMAL(38,9)),
    ('c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
  ) t(key, i8, u8, i32, i64, u64, dec, f32, f64, d, ts, tstz, tsns, tsms, tm, id, bin, flag, s, dec38)`

const EXPECTED: Record<string, { kind: string; values: [string, string, string] }> = {
  i8: { kind: 'json', values: ['42', '-128', 'null'] },
  u8: { kind: 'json', values: ['200', '0', 'null'] },
  i32: { kind: 'json', values: ['-7', '-2147483648', 'null'] },
  i64: { kind: 'json', values: ['123', '-9223372036854775808', 'null'] },
  u64: { kind: 'json', values: ['18446744073709551615', '0', 'null'] },
  dec: { kind: 'json', values: ['1.50', '-0.05', 'null'] },
  dec38: { kind: 'json', values: ['12345678901234567890123456789.123456789', '-0.000000001', 'null'] },
  f32: { kind: 'json', values: ['0.1', '-1.5', 'null'] },
  f64: { kind: 'json', values: ['0.1', '1e+300', 'null'] },
  d: { kind: 'string', values: ['2024-06-01', '1969-12-31', ''] },
  ts: { kind: 'string', values: ['2024-06-01T12:34:56.123456', '1900-01-01T00:00:00.000000', ''] },
  tstz: { kind: 'string', values: ['2024-06-01T12:34:56.500000Z', '1969-12-31T23:59:59.999999Z', ''] },
  tsns: { kind: 'string', values: ['2024-06-01T12:34:56.123456789', '1970-01-01T00:00:00.000000001', ''] },
  tsms: { kind: 'string', values: ['2024-06-01T12:34:56.007', '2262-04-11T23:47:16.854', ''] },
  tm: { kind: 'string', values: ['01:02:03.500000', '23:59:59.999999', ''] },
  id: { kind: 'string', values: ['0d3c4c58-5e1b-4a70-9c3e-8f1d2b6a7e90', '00000000-0000-0000-0000-000000000000', ''] },
  flag: { kind: 'json', values: ['true', 'false', 'null'] },
  s: { kind: 'string', values: ['a', '', ''] },
}

describe.each(['v1', 'v2'] as const)('readParquet, typed columns from DuckDB, pages %s', (version) => {
  let path: string
  beforeAll(async () => {
    path = await writeParquetWithDuckdb(file(), TYPED, { version })
  })

  it.each(Object.keys(EXPECTED))('column %s: value bytes and kind; NULL is the empty value of the kind', async (column) => {
    const recs = await collect(readParquet(path, { valueField: column }))
    expect(recs.map((r) => [r.key.toString(), r.value.toString('utf8'), r.valueKind])).toEqual(
      ['a', 'b', 'c'].map((k, i) => [k, EXPECTED[column]!.values[i], EXPECTED[column]!.kind]),
    )
  })

  it('binary columns give their bytes, NULL as zero bytes', async () => {
    const recs = await collect(readParquet(path, { valueField: 'bin' }))
    expect(recs.map((r) => [r.value.toString('hex'), r.valueKind])).toEqual([
      ['00ff6162', 'bytes'],
      ['', 'bytes'],
      ['', 'bytes'],
    ])
  })

  it.each(['i8', 'u64', 'dec38', 'f32', 'd', 'ts', 'tstz', 'id', 's'])('column %s as a key gives its text', async (column) => {
    const records = readParquet(path, { keyField: column, valueField: 'key' })
    const first = await records.next()
    await records.return(undefined)
    expect([first.value?.key.toString('utf8'), first.value?.keyKind]).toEqual([EXPECTED[column]!.values[0], 'string'])
  })

  it('the whole row is one JSON object with every column in order', async () => {
    const [rec] = await collect(readParquet(path))
    expect(rec?.valueKind).toBe('json')
    expect(rec?.value.toString()).toBe(
      '{"key":"a","i8":42,"u8":200,"i32":-7,"i64":123,"u64":18446744073709551615,"dec":1.50,"f32":0.1,"f64":0.1,' +
        '"d":"2024-06-01","ts":"2024-06-01T12:34:56.123456","tstz":"2024-06-01T12:34:56.500000Z",' +
        '"tsns":"2024-06-01T12:34:56.123456789","tsms":"2024-06-01T12:34:56.007","tm":"01:02:03.500000",' +
        '"id":"0d3c4c58-5e1b-4a70-9c3e-8f1d2b6a7e90","bin":"AP9hYg==","flag":true,"s":"a",' +
        '"dec38":12345678901234567890123456789.123456789}',
    )
  })

  it('a NULL key is an error naming the row and column', async () => {
    await expectBadInput(() => readParquet(path, { keyField: 'i8', valueField: 'key' }), `${path}: row 2: key column 'i8' is null`)
  })
})

describe('readParquet', () => {
  it('reads text key and value columns with row numbers', async () => {
    const path = await writeParquet(file(), { key: 'VARCHAR', value: 'VARCHAR' }, [
      { key: 'a', value: '1' },
      { key: 'b', value: 'clé ✓ \u0000' },
    ])
    expect((await collect(readParquet(path))).map(plain)).toEqual([
      { key: 'a', value: '1', keyKind: 'string', valueKind: 'string', row: 0, order: 0 },
      { key: 'b', value: 'clé ✓ \u0000', keyKind: 'string', valueKind: 'string', row: 1, order: 1 },
    ])
  })

  it('gives binary columns as raw bytes, for keys and values', async () => {
    const key = Buffer.from([0, 0xff, 0x80, 10])
    const value = Buffer.from([0xc3, 0x28, 0])
    const path = await writeParquet(file(), { key: 'BLOB', value: 'BLOB' }, [{ key, value }])
    const [rec] = await collect(readParquet(path))
    expect(rec?.key).toEqual(key)
    expect(rec?.keyKind).toBe('bytes')
    expect(rec?.value).toEqual(value)
    expect(rec?.valueKind).toBe('bytes')
    expect(Buffer.isBuffer(rec?.key)).toBe(true)
  })

  it('nested columns (struct, list, map, JSON) are JSON values', async () => {
    const path = await writeParquetWithDuckdb(
      file(),
      `SELECT 'k' || i AS key, {'n': i, 'name': 'x' || i, 'at': DATE '2024-01-01' + i::INTEGER} AS st, [i, NULL, i + 1] AS li,
         MAP {'a': i} AS mp, ('{"j":' || i || '}')::JSON AS js, [{'b': '\\x01'::BLOB}] AS deep
       FROM range(3) t(i)`,
    )
    const read = async (valueField: string): Promise<unknown[]> =>
      (await collect(readParquet(path, { valueField }))).map((r) => JSON.parse(r.value.toString()) as unknown)
    expect(await read('st')).toEqual([0, 1, 2].map((i) => ({ n: i, name: `x${i}`, at: `2024-01-0${i + 1}` })))
    expect(await read('li')).toEqual([0, 1, 2].map((i) => [i, null, i + 1]))
    expect(await read('mp')).toEqual([0, 1, 2].map((i) => ({ a: i })))
    expect(await read('js')).toEqual([0, 1, 2].map((i) => ({ j: i })))
    expect(await read('deep')).toEqual([0, 1, 2].map(() => [{ b: 'AQ==' }]))
    const [whole] = await collect(readParquet(path))
    expect(JSON.parse(whole!.value.toString())).toEqual({
      key: 'k0',
      st: { n: 0, name: 'x0', at: '2024-01-01' },
      li: [0, null, 1],
      mp: { a: 0 },
      js: { j: 0 },
      deep: [{ b: 'AQ==' }],
    })
  })

  it('counts rows across row groups', async () => {
    const rows = Array.from({ length: 5000 }, (_, i) => ({ key: `k${i}`, value: `v${i}` }))
    const path = await writeParquet(file(), { key: 'VARCHAR', value: 'VARCHAR' }, rows, { rowGroupSize: 2048 })
    const recs = await collect(readParquet(path))
    expect(recs.map((r) => [r.source.row, ...kv(r)])).toEqual(rows.map((r, i) => [i, r.key, r.value]))
  })

  it('reads a file with no rows, and an empty file, as no records', async () => {
    const path = await writeParquet(file(), { key: 'VARCHAR' }, [])
    expect(await collect(readParquet(path))).toEqual([])
    expect(await collect(readParquet(writeInput(dir, 'zero.parquet', '')))).toEqual([])
  })

  describe('errors name the file, and the row or column', () => {
    it('a null key', async () => {
      const path = await writeParquet(file(), { key: 'VARCHAR', value: 'VARCHAR' }, [{ key: 'a', value: '1' }, { value: '2' }])
      await expectBadInput(() => readParquet(path), `${path}: row 1: key column 'key' is null`)
    })

    it('an empty key', async () => {
      const path = await writeParquet(file(), { key: 'VARCHAR' }, [{ key: 'a' }, { key: 'b' }, { key: '' }])
      await expectBadInput(() => readParquet(path), `${path}: row 2: empty key`)
    })

    it('a key or value column that does not exist, listing the columns', async () => {
      const path = await writeParquet(file(), { id: 'VARCHAR', body: 'VARCHAR' }, [{ id: 'a', body: 'b' }])
      await expectBadInput(() => readParquet(path), `${path}: no column 'key'; columns are: id, body`)
      await expectBadInput(
        () => readParquet(path, { keyField: 'id', valueField: 'value' }),
        `${path}: no column 'value'; columns are: id, body`,
      )
    })

    it('a key column of a type with no text form, or nested', async () => {
      const path = await writeParquet(file(), { key: 'BOOLEAN', st: { struct: { a: 'INTEGER' } } }, [{ key: true, st: { a: 1 } }])
      await expectBadInput(() => readParquet(path), `${path}: key column 'key' is of type BOOLEAN; a key must be text, a number or bytes`)
      await expectBadInput(
        () => readParquet(path, { keyField: 'st' }),
        `${path}: key column 'st' is a nested column; a key must be text, a number or bytes`,
      )
    })

    it('a column of a type rostore does not read, named', async () => {
      const path = await writeParquetWithDuckdb(file(), `SELECT 'a' AS key, INTERVAL 1 DAY AS span`)
      await expectBadInput(() => readParquet(path), `${path}: column 'span' has type INTERVAL, which rostore does not read`)
      expect((await collect(readParquet(path, { valueField: 'key' }))).map(kv)).toEqual([['a', 'a']])
    })

    it('invalid UTF-8 in a text column', async () => {
      const good = await writeParquet(file(), { key: 'VARCHAR', value: 'VARCHAR' }, [{ key: 'k', value: 'é' }], { codec: 'uncompressed' })
      const bytes = readFileSync(good)
      const at = bytes.indexOf(Buffer.from('é'))
      bytes[at + 1] = 0x28 // 0xc3 0x28 is not UTF-8
      const path = join(dir, 'bad-utf8.parquet')
      writeFileSync(path, bytes)
      await expectBadInput(() => readParquet(path), `${path}: row 0: invalid UTF-8 in STRING column 'value'`)
    })

    it('a truncated file', async () => {
      const good = await writeParquet(file(), { key: 'VARCHAR' }, [{ key: 'a' }])
      const bytes = readFileSync(good)
      const path = join(dir, 'truncated.parquet')
      writeFileSync(path, bytes.subarray(0, bytes.length - 10))
      await expectBadInput(
        () => readParquet(path),
        `${path}: not a readable Parquet file: it does not end with PAR1 (the file is cut short?)`,
      )
    })

    it('a file that is not Parquet', async () => {
      const path = writeInput(dir, 'text.parquet', 'key,value\na,1\n')
      await expectBadInput(() => readParquet(path), /text\.parquet: not a readable Parquet file: /)
    })

    it('a missing file', async () => {
      await expectBadInput(() => readParquet(join(dir, 'nope.parquet')), /nope\.parquet: cannot read file: ENOENT/)
    })
  })

  it('stops once the signal aborts', async () => {
    const path = await writeParquet(file(), { key: 'VARCHAR' }, [{ key: 'a' }, { key: 'b' }])
    const controller = new AbortController()
    const records = readParquet(path, { signal: controller.signal })
    expect((await records.next()).value?.key.toString()).toBe('a')
    controller.abort(new Error('stop'))
    await expect(records.next()).rejects.toThrow('stop')
  })

  it('refuses a byte range', async () => {
    await expect(collect(readParquet(join(dir, 'any.parquet'), { start: 0 }))).rejects.toThrow(RangeError)
  })
})
