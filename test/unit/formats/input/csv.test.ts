import { readCsv } from '../../../../formats/input/csv'
import { collect, expectBadInput, kv, plain, tempDir, writeInput } from './helpers'

const dir = tempDir()

describe('readCsv', () => {
  it('reads key and value columns by header name, with line and offset of each row', async () => {
    const path = writeInput(dir, 'a.csv', 'key,value\na,1\nbb,22\n')
    expect((await collect(readCsv(path))).map(plain)).toEqual([
      { key: 'a', value: '1', keyKind: 'string', valueKind: 'string', line: 2, order: 10 },
      { key: 'bb', value: '22', keyKind: 'string', valueKind: 'string', line: 3, order: 14 },
    ])
  })

  it('unquotes quoted fields with commas, doubled quotes and line breaks', async () => {
    const path = writeInput(dir, 'quoted.csv', 'key,value\n"a,1","say ""hi"""\n"multi","line 1\nline 2"\nnext,""\n')
    const recs = await collect(readCsv(path))
    expect(recs.map(kv)).toEqual([
      ['a,1', 'say "hi"'],
      ['multi', 'line 1\nline 2'],
      ['next', ''],
    ])
    // A row's line is where it starts; the multi-line field pushes the next row down.
    expect(recs.map((r) => r.source.line)).toEqual([2, 3, 5])
  })

  it('reads CRLF files, CR LF inside quotes kept', async () => {
    const path = writeInput(dir, 'crlf.csv', 'key,value\r\na,"x\r\ny"\r\nb,2\r\n')
    expect((await collect(readCsv(path))).map(kv)).toEqual([
      ['a', 'x\r\ny'],
      ['b', '2'],
    ])
  })

  it('reads a last row without a line end, also one ending in an empty field', async () => {
    expect((await collect(readCsv(writeInput(dir, 'nolf.csv', 'key,value\na,1\nb,2')))).map(kv)).toEqual([
      ['a', '1'],
      ['b', '2'],
    ])
    expect((await collect(readCsv(writeInput(dir, 'nolf2.csv', 'key,value\nb,')))).map(kv)).toEqual([['b', '']])
  })

  it('takes other columns by name', async () => {
    const path = writeInput(dir, 'named.csv', 'id,x,body\na,0,hello\n')
    expect((await collect(readCsv(path, { keyField: 'id', valueField: 'body' }))).map(kv)).toEqual([['a', 'hello']])
  })

  it('without a value column, the value is the whole row as a JSON object of strings', async () => {
    const path = writeInput(dir, 'whole.csv', 'key,n,__proto__\na,1,"x,y"\n')
    const [rec] = await collect(readCsv(path))
    expect(rec?.valueKind).toBe('json')
    expect(JSON.parse(rec?.value.toString() ?? '')).toEqual({ key: 'a', n: '1', ['__proto__']: 'x,y' })
    expect(rec?.value.toString()).toBe('{"key":"a","n":"1","__proto__":"x,y"}')
  })

  it('keeps unicode and NUL bytes', async () => {
    const path = writeInput(dir, 'uni.csv', '\ufeffkey,value\nclé,"✓\u0000🎉"\n')
    const [rec] = await collect(readCsv(path))
    expect(rec?.key.toString()).toBe('clé')
    expect(rec?.value).toEqual(Buffer.from('✓\u0000🎉'))
  })

  it('reads an empty file or a header alone as no records', async () => {
    expect(await collect(readCsv(writeInput(dir, 'empty.csv', '')))).toEqual([])
    expect(await collect(readCsv(writeInput(dir, 'header.csv', 'key,value\n')))).toEqual([])
  })

  it('allows blank lines at the end', async () => {
    const path = writeInput(dir, 'trailing.csv', 'key,value\na,1\n\r\n\n')
    expect((await collect(readCsv(path))).map(kv)).toEqual([['a', '1']])
  })

  it('reads a quoted field longer than a read chunk', async () => {
    const long = `${'x'.repeat(1 << 20)}""${'y'.repeat(1 << 20)}`
    const path = writeInput(dir, 'long.csv', `key,value\nbig,"${long}"\nz,1\n`)
    const recs = await collect(readCsv(path))
    expect(recs[0]?.value.length).toBe(2 * (1 << 20) + 1)
    expect(recs[0]?.value.subarray((1 << 20) - 1, (1 << 20) + 2).toString()).toBe('x"y')
    expect(recs.map((r) => r.source.line)).toEqual([2, 3])
  })

  describe('errors name the file and line', () => {
    it('an unterminated quote, at the line where the field starts', async () => {
      const path = writeInput(dir, 'unterminated.csv', 'key,value\na,1\nb,"open\nmore\n')
      await expectBadInput(() => readCsv(path), `${path}:3: unterminated quoted field`)
    })

    it('a stray quote in an unquoted field', async () => {
      const path = writeInput(dir, 'stray.csv', 'key,value\na,1\nb,x"y\n')
      await expectBadInput(() => readCsv(path), /^.*stray\.csv:3: stray quote in an unquoted field/)
    })

    it('text after a closing quote', async () => {
      const path = writeInput(dir, 'after.csv', 'key,value\na,"x"y\n')
      await expectBadInput(() => readCsv(path), /after\.csv:2: unexpected character after a closing quote/)
    })

    it('a row with a different number of fields than the header', async () => {
      const path = writeInput(dir, 'count.csv', 'key,value,extra\na,1,x\nb,2\n')
      await expectBadInput(() => readCsv(path), `${path}:3: expected 3 fields (key, value, extra), got 2`)
    })

    it('a key column missing from the header', async () => {
      const path = writeInput(dir, 'nokey.csv', 'a,b\n1,2\n')
      await expectBadInput(() => readCsv(path), `${path}:1: no column 'key' in header; columns are: a, b`)
      await expectBadInput(() => readCsv(path, { keyField: 'a', valueField: 'c' }), `${path}:1: no column 'c' in header; columns are: a, b`)
    })

    it('duplicate header names', async () => {
      const path = writeInput(dir, 'dup.csv', 'key,value,key\n')
      await expectBadInput(() => readCsv(path), `${path}:1: duplicate column 'key' in header`)
    })

    it('an empty line in the middle', async () => {
      const path = writeInput(dir, 'gap.csv', 'key,value\na,1\n\nb,2\n')
      await expectBadInput(() => readCsv(path), `${path}:3: empty line`)
    })

    it('an empty key and invalid UTF-8', async () => {
      const empty = writeInput(dir, 'emptykey.csv', 'key,value\n,1\n')
      await expectBadInput(() => readCsv(empty), `${empty}:2: empty key`)
      const latin = writeInput(
        dir,
        'latin1.csv',
        Buffer.concat([Buffer.from('key,value\na,1\nb,'), Buffer.from([0xe9]), Buffer.from('\n')]),
      )
      await expectBadInput(() => readCsv(latin), `${latin}:3: invalid UTF-8 in column 'value'`)
    })

    it('a bare carriage return', async () => {
      const path = writeInput(dir, 'cr.csv', 'key,value\na,1\rb,2\n')
      await expectBadInput(() => readCsv(path), `${path}:2: carriage return not followed by a line feed`)
    })

    it('a missing file', async () => {
      await expectBadInput(() => readCsv(`${dir}/nope.csv`), /nope\.csv: cannot read file: ENOENT/)
    })
  })

  it('refuses a byte range: CSV rows cannot be found from the middle', async () => {
    const path = writeInput(dir, 'range.csv', 'key,value\n')
    await expect(collect(readCsv(path, { start: 0, end: 5 }))).rejects.toThrow(RangeError)
  })

  it('stops once the signal aborts', async () => {
    const path = writeInput(dir, 'abort.csv', 'key,value\na,1\nb,2\n')
    const controller = new AbortController()
    const records = readCsv(path, { signal: controller.signal })
    expect((await records.next()).value?.key.toString()).toBe('a')
    controller.abort(new Error('stop'))
    await expect(records.next()).rejects.toThrow('stop')
  })
})
