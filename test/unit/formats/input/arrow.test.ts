import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Binary, Int32, makeVector, Struct, Field, Table, tableToIPC, Utf8, vectorFromArray, type Vector } from 'apache-arrow'
import { readArrow } from '../../../../formats/input/arrow'
import { collect, escapeRe, expectBadInput, kv, plain, tempDir, writeInput } from './helpers'

const dir = tempDir()
let seq = 0

function writeArrow(table: Table, format: 'file' | 'stream'): string {
  const path = join(dir, `t${seq++}.${format === 'file' ? 'arrow' : 'arrows'}`)
  writeFileSync(path, tableToIPC(table, format))
  return path
}

const utf8 = (values: Array<string | null>): Vector => vectorFromArray(values, new Utf8())

describe.each(['file', 'stream'] as const)('readArrow, IPC %s format', (format) => {
  it('reads Utf8 key and value columns with row numbers', async () => {
    const path = writeArrow(new Table({ key: utf8(['a', 'b']), value: utf8(['1', 'clé ✓ \u0000']) }), format)
    expect((await collect(readArrow(path))).map(plain)).toEqual([
      { key: 'a', value: '1', keyKind: 'string', valueKind: 'string', row: 0, order: 0 },
      { key: 'b', value: 'clé ✓ \u0000', keyKind: 'string', valueKind: 'string', row: 1, order: 1 },
    ])
  })

  it('reads dictionary-encoded strings as strings', async () => {
    // tableFromArrays-style string columns come out dictionary encoded.
    const path = writeArrow(new Table({ key: vectorFromArray(['x', 'y', 'x']), value: utf8(['1', '2', '3']) }), format)
    expect((await collect(readArrow(path))).map((r) => [r.key.toString(), r.keyKind])).toEqual([
      ['x', 'string'],
      ['y', 'string'],
      ['x', 'string'],
    ])
  })

  it('gives Binary columns as raw bytes, for keys and values', async () => {
    const keys = [new Uint8Array([0, 0xff]), new Uint8Array([0x80])]
    const path = writeArrow(
      new Table({
        key: vectorFromArray(keys, new Binary()),
        value: vectorFromArray([new Uint8Array([1]), new Uint8Array(0)], new Binary()),
      }),
      format,
    )
    const recs = await collect(readArrow(path))
    expect(recs.map((r) => [r.key.toString('hex'), r.keyKind, r.value.toString('hex'), r.valueKind])).toEqual([
      ['00ff', 'bytes', '01', 'bytes'],
      ['80', 'bytes', '', 'bytes'],
    ])
    expect(Buffer.isBuffer(recs[0]?.key)).toBe(true)
  })

  it('turns Int64 and Int32 keys into decimal text, Int64 values into exact JSON numbers', async () => {
    const path = writeArrow(
      new Table({
        id: makeVector(BigInt64Array.from([9007199254740993n, -1n])),
        small: makeVector(Int32Array.from([5, 6])),
        value: makeVector(BigInt64Array.from([12345678901234567890n % 2n ** 63n, 0n])),
      }),
      format,
    )
    expect((await collect(readArrow(path, { keyField: 'id' }))).map((r) => [...kv(r), r.keyKind, r.valueKind])).toEqual([
      ['9007199254740993', (12345678901234567890n % 2n ** 63n).toString(), 'string', 'json'],
      ['-1', '0', 'string', 'json'],
    ])
    expect((await collect(readArrow(path, { keyField: 'small', valueField: 'id' }))).map(kv)).toEqual([
      ['5', '9007199254740993'],
      ['6', '-1'],
    ])
  })

  it('without a value column, the value is the whole row as JSON', async () => {
    const meta = makeVector({
      type: new Struct([new Field('n', new Int32())]),
      length: 1,
      nullCount: 0,
      children: [makeVector(Int32Array.from([3])).data[0]!],
    })
    const path = writeArrow(
      new Table({
        key: utf8(['a']),
        big: makeVector(BigInt64Array.from([2n ** 60n])),
        bin: vectorFromArray([new Uint8Array([1, 2, 3])], new Binary()),
        meta,
      }),
      format,
    )
    const [rec] = await collect(readArrow(path))
    expect(rec?.valueKind).toBe('json')
    expect(rec?.value.toString()).toBe(`{"key":"a","big":${2n ** 60n},"bin":"AQID","meta":{"n":3}}`)
  })

  it('counts rows across record batches', async () => {
    const batch = (from: number): Table => new Table({ key: utf8([`k${from}`, `k${from + 1}`]) })
    const path = writeArrow(batch(0).concat(batch(2), batch(4)), format)
    const recs = await collect(readArrow(path))
    expect(recs.map((r) => [r.key.toString(), r.source.row])).toEqual([
      ['k0', 0],
      ['k1', 1],
      ['k2', 2],
      ['k3', 3],
      ['k4', 4],
      ['k5', 5],
    ])
  })

  it('reports a null key with its row', async () => {
    const path = writeArrow(new Table({ key: utf8(['a', null]) }), format)
    await expectBadInput(() => readArrow(path), `${path}: row 1: key column 'key' is null`)
  })

  it('reports a missing key column, listing the columns', async () => {
    const path = writeArrow(new Table({ id: utf8(['a']), body: utf8(['b']) }), format)
    await expectBadInput(() => readArrow(path), `${path}: no column 'key'; columns are: id, body`)
  })

  it('reports a truncated file', async () => {
    const good = writeArrow(new Table({ key: utf8(Array.from({ length: 100 }, (_, i) => `key-${i}`)) }), format)
    const bytes = readFileSync(good)
    const path = join(dir, `truncated-${format}.arrow`)
    writeFileSync(path, bytes.subarray(0, Math.floor(bytes.length * 0.7)))
    await expectBadInput(
      () => readArrow(path),
      format === 'file'
        ? `${path}: truncated Arrow IPC file: it starts like the file format but has no footer`
        : new RegExp(`^${escapeRe(path)}: row 0: cannot read Arrow data: Expected to read \\d+ bytes for message body, but only read \\d+`),
    )
  })
})

describe('readArrow', () => {
  it('reads an empty file as no records', async () => {
    expect(await collect(readArrow(writeInput(dir, 'empty.arrow', '')))).toEqual([])
  })

  it('reports a file that is not Arrow', async () => {
    const path = writeInput(dir, 'text.arrow', 'key,value\na,1\nthis is a CSV file, not Arrow\n')
    await expectBadInput(() => readArrow(path), /text\.arrow: not a readable Arrow IPC file: .+/)
  })

  it('reports a missing file', async () => {
    await expectBadInput(() => readArrow(join(dir, 'nope.arrow')), /nope\.arrow: cannot read file: ENOENT/)
  })

  it('stops once the signal aborts', async () => {
    const path = writeArrow(new Table({ key: utf8(['a', 'b']) }), 'file')
    const controller = new AbortController()
    const records = readArrow(path, { signal: controller.signal })
    expect((await records.next()).value?.key.toString()).toBe('a')
    controller.abort(new Error('stop'))
    await expect(records.next()).rejects.toThrow('stop')
  })

  it('takes named columns', async () => {
    const path = writeArrow(new Table({ id: utf8(['a']), body: utf8(['x']), value: utf8(['ignored']) }), 'stream')
    expect((await collect(readArrow(path, { keyField: 'id', valueField: 'body' }))).map(kv)).toEqual([['a', 'x']])
  })
})
