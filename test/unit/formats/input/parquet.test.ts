import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readParquet } from '../../../../formats/input/parquet'
import { collect, expectBadInput, kv, plain, tempDir, writeInput } from './helpers'
import { writeParquet } from './write-parquet'

const dir = tempDir()
let seq = 0
const file = (): string => join(dir, `t${seq++}.parquet`)

describe('readParquet', () => {
  it('reads UTF8 key and value columns with row numbers', async () => {
    const path = await writeParquet(file(), { key: { type: 'UTF8' }, value: { type: 'UTF8' } }, [
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
    const path = await writeParquet(file(), { key: { type: 'BYTE_ARRAY' }, value: { type: 'BYTE_ARRAY' } }, [{ key, value }])
    const [rec] = await collect(readParquet(path))
    expect(rec?.key).toEqual(key)
    expect(rec?.keyKind).toBe('bytes')
    expect(rec?.value).toEqual(value)
    expect(rec?.valueKind).toBe('bytes')
    expect(Buffer.isBuffer(rec?.key)).toBe(true)
  })

  it('turns integer keys into decimal text and other values into JSON', async () => {
    const path = await writeParquet(
      file(),
      {
        id: { type: 'INT64' },
        n: { type: 'INT32' },
        d: { type: 'DOUBLE' },
        j: { type: 'JSON' },
        flag: { type: 'BOOLEAN' },
        big: { type: 'INT64' },
      },
      [{ id: 42, n: -7, d: 1.5, j: { x: [1, 'y'] }, flag: true, big: 123456789012345 }],
    )
    const read = async (valueField: string): Promise<[string, string, string]> => {
      const [rec] = await collect(readParquet(path, { keyField: 'id', valueField }))
      return [rec?.key.toString() ?? '', rec?.value.toString() ?? '', rec?.valueKind ?? '']
    }
    expect(await read('n')).toEqual(['42', '-7', 'json'])
    expect(await read('d')).toEqual(['42', '1.5', 'json'])
    expect(await read('j')).toEqual(['42', '{"x":[1,"y"]}', 'json'])
    expect(await read('flag')).toEqual(['42', 'true', 'json'])
    expect(await read('big')).toEqual(['42', '123456789012345', 'json'])
  })

  it('without a value column, the value is the whole row as JSON (INT64 digits kept, bytes in base64)', async () => {
    const path = await writeParquet(
      file(),
      { key: { type: 'UTF8' }, n: { type: 'INT64' }, b: { type: 'BYTE_ARRAY' }, s: { type: 'UTF8', optional: true } },
      [{ key: 'a', n: 2 ** 53 - 1, b: Buffer.from([1, 2, 3]) }],
    )
    const [rec] = await collect(readParquet(path))
    expect(rec?.valueKind).toBe('json')
    expect(rec?.value.toString()).toBe('{"key":"a","n":9007199254740991,"b":"AQID"}')
  })

  it('counts rows across row groups, including nested columns', async () => {
    const rows = Array.from({ length: 25 }, (_, i) => ({ key: `k${i}`, meta: { size: i } }))
    const path = await writeParquet(file(), { key: { type: 'UTF8' }, meta: { fields: { size: { type: 'INT32' } } } }, rows, 10)
    const recs = await collect(readParquet(path, { valueField: 'meta' }))
    expect(recs.map((r) => r.source.row)).toEqual(rows.map((_, i) => i))
    expect(kv(recs[24]!)).toEqual(['k24', '{"size":24}'])
  })

  it('reads a file with no rows, and an empty file, as no records', async () => {
    const path = await writeParquet(file(), { key: { type: 'UTF8' } }, [])
    expect(await collect(readParquet(path))).toEqual([])
    expect(await collect(readParquet(writeInput(dir, 'zero.parquet', '')))).toEqual([])
  })

  describe('errors name the file and row', () => {
    it('a missing or null key', async () => {
      const path = await writeParquet(file(), { key: { type: 'UTF8', optional: true }, value: { type: 'UTF8' } }, [
        { key: 'a', value: '1' },
        { value: '2' },
      ])
      await expectBadInput(() => readParquet(path), `${path}: row 1: missing key field 'key'`)
    })

    it('an empty key', async () => {
      const path = await writeParquet(file(), { key: { type: 'UTF8' } }, [{ key: 'a' }, { key: 'b' }, { key: '' }])
      await expectBadInput(() => readParquet(path), `${path}: row 2: empty key`)
    })

    it('a key or value column that does not exist, listing the columns', async () => {
      const path = await writeParquet(file(), { id: { type: 'UTF8' }, body: { type: 'UTF8' } }, [{ id: 'a', body: 'b' }])
      await expectBadInput(() => readParquet(path), `${path}: no column 'key'; columns are: id, body`)
      await expectBadInput(
        () => readParquet(path, { keyField: 'id', valueField: 'value' }),
        `${path}: no column 'value'; columns are: id, body`,
      )
    })

    it('a key column of a type with no text form', async () => {
      const path = await writeParquet(file(), { key: { type: 'BOOLEAN' } }, [{ key: true }])
      await expectBadInput(() => readParquet(path), `${path}: row 0: key field 'key' must be a string, a number or bytes, not a boolean`)
    })

    it('a truncated file', async () => {
      const good = await writeParquet(file(), { key: { type: 'UTF8' } }, [{ key: 'a' }])
      const bytes = readFileSync(good)
      const path = join(dir, 'truncated.parquet')
      writeFileSync(path, bytes.subarray(0, bytes.length - 10))
      await expectBadInput(() => readParquet(path), `${path}: not a readable Parquet file: not a valid parquet file`)
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
    const path = await writeParquet(file(), { key: { type: 'UTF8' } }, [{ key: 'a' }, { key: 'b' }])
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
