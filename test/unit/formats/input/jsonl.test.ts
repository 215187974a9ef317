import { readJsonl } from '../../../../formats/input/jsonl'
import { collect, expectBadInput, kv, plain, tempDir, writeInput } from './helpers'

const dir = tempDir()

describe('readJsonl', () => {
  it('reads key and value fields with line numbers and byte offsets', async () => {
    const first = '{"key":"a","value":"1"}\n'
    const path = writeInput(dir, 'a.jsonl', `${first}{"key":"b","value":"2"}\n`)
    expect((await collect(readJsonl(path))).map(plain)).toEqual([
      { key: 'a', value: '1', keyKind: 'string', valueKind: 'string', line: 1, order: 0 },
      { key: 'b', value: '2', keyKind: 'string', valueKind: 'string', line: 2, order: first.length },
    ])
  })

  it('writes non-string values as JSON', async () => {
    const path = writeInput(
      dir,
      'json.jsonl',
      ['{"key":"n","value":42}', '{"key":"o","value":{"x":[1,true]}}', '{"key":"z","value":null}', '{"key":"b","value":false}', ''].join(
        '\n',
      ),
    )
    const recs = await collect(readJsonl(path))
    expect(recs.map((r) => [...kv(r), r.valueKind])).toEqual([
      ['n', '42', 'json'],
      ['o', '{"x":[1,true]}', 'json'],
      ['z', 'null', 'json'],
      ['b', 'false', 'json'],
    ])
  })

  it('without a value field, the value is the whole record as written', async () => {
    const line = '{"key": "k", "n": 12345678901234567890, "s": "x"}'
    const path = writeInput(dir, 'whole.jsonl', `  ${line}  \r\n`)
    const [rec] = await collect(readJsonl(path))
    expect(rec?.valueKind).toBe('json')
    // Not re-serialised: the 20-digit number keeps its digits.
    expect(rec?.value.toString()).toBe(line)
  })

  it('takes named key and value fields', async () => {
    const path = writeInput(dir, 'fields.jsonl', '{"id":"a","body":"x","value":"ignored"}\n')
    expect((await collect(readJsonl(path, { keyField: 'id', valueField: 'body' }))).map(kv)).toEqual([['a', 'x']])
  })

  it('turns number keys into decimal text', async () => {
    const path = writeInput(dir, 'numkey.jsonl', '{"key":7,"value":"a"}\n{"key":-12.5,"value":"b"}\n')
    expect((await collect(readJsonl(path))).map((r) => [r.key.toString(), r.keyKind])).toEqual([
      ['7', 'string'],
      ['-12.5', 'string'],
    ])
  })

  it('keeps unicode, escapes and NUL characters', async () => {
    const path = writeInput(dir, 'uni.jsonl', '{"key":"clé ✓","value":"a\\u0000b\\n🎉"}\n')
    const [rec] = await collect(readJsonl(path))
    expect(rec?.key.toString()).toBe('clé ✓')
    expect(rec?.value).toEqual(Buffer.from('a\u0000b\n🎉', 'utf8'))
  })

  it('reads CRLF files and allows blank lines at the end', async () => {
    const path = writeInput(dir, 'crlf.jsonl', '{"key":"a","value":"1"}\r\n{"key":"b","value":"2"}\r\n\r\n  \n')
    expect((await collect(readJsonl(path))).map(kv)).toEqual([
      ['a', '1'],
      ['b', '2'],
    ])
  })

  it('reads an empty file as no records', async () => {
    expect(await collect(readJsonl(writeInput(dir, 'empty.jsonl', '')))).toEqual([])
  })

  it('keeps an empty string value', async () => {
    const path = writeInput(dir, 'emptyvalue.jsonl', '{"key":"a","value":""}\n')
    const [rec] = await collect(readJsonl(path))
    expect(rec?.value).toEqual(Buffer.alloc(0))
    expect(rec?.valueKind).toBe('string')
  })

  describe('errors name the file and line', () => {
    const bad = (name: string, lines: string[]): string => writeInput(dir, name, `{"key":"ok","value":"1"}\n${lines.join('\n')}\n`)

    it('invalid JSON, with the parser reason', async () => {
      const path = bad('invalid.jsonl', ['{"key": "a",}'])
      await expectBadInput(() => readJsonl(path), new RegExp(`:2: invalid JSON: .*(Unexpected|Expected)`))
    })

    it('a line that is not an object', async () => {
      const path = bad('array.jsonl', ['["key","a"]'])
      await expectBadInput(() => readJsonl(path), `${path}:2: expected a JSON object, got an array`)
      const num = bad('number.jsonl', ['7'])
      await expectBadInput(() => readJsonl(num), `${num}:2: expected a JSON object, got a number`)
      const nul = bad('null.jsonl', ['null'])
      await expectBadInput(() => readJsonl(nul), `${nul}:2: expected a JSON object, got null`)
    })

    it('a missing key field, named', async () => {
      const path = bad('nokey.jsonl', ['{"id":"a"}'])
      await expectBadInput(() => readJsonl(path), `${path}:2: missing key field 'key'`)
      await expectBadInput(() => readJsonl(path, { keyField: 'name' }), `${path}:1: missing key field 'name'`)
    })

    it('a missing value field that was asked for', async () => {
      const path = bad('novalue.jsonl', [])
      await expectBadInput(() => readJsonl(path, { valueField: 'body' }), `${path}:1: missing value field 'body'`)
    })

    it('keys that have no text form', async () => {
      await expectBadInput(() => readJsonl(bad('nullkey.jsonl', ['{"key":null}'])), /:2: key field 'key' is null$/)
      await expectBadInput(
        () => readJsonl(bad('boolkey.jsonl', ['{"key":true}'])),
        /:2: key field 'key' must be a string, a number or bytes, not a boolean$/,
      )
      await expectBadInput(
        () => readJsonl(bad('objkey.jsonl', ['{"key":{"a":1}}'])),
        /:2: key field 'key' must be a string, a number or bytes, not an object$/,
      )
      await expectBadInput(
        () => readJsonl(bad('bigkey.jsonl', ['{"key":12345678901234567890}'])),
        /:2: key field 'key' is the integer .* too large to be exact/,
      )
    })

    it('an empty key', async () => {
      const path = bad('emptykey.jsonl', ['{"key":"","value":"x"}'])
      await expectBadInput(() => readJsonl(path), `${path}:2: empty key`)
    })

    it('an empty line in the middle', async () => {
      const path = bad('gap.jsonl', ['', '{"key":"b"}'])
      await expectBadInput(() => readJsonl(path), `${path}:2: empty line`)
    })

    it('invalid UTF-8', async () => {
      const path = writeInput(
        dir,
        'latin1.jsonl',
        Buffer.concat([Buffer.from('{"key":"a","value":"'), Buffer.from([0xff]), Buffer.from('"}\n')]),
      )
      await expectBadInput(() => readJsonl(path), `${path}:1: invalid UTF-8`)
    })
  })

  it('stops once the signal aborts', async () => {
    const path = writeInput(dir, 'abort.jsonl', '{"key":"a"}\n{"key":"b"}\n')
    const controller = new AbortController()
    const records = readJsonl(path, { signal: controller.signal })
    expect((await records.next()).value?.key.toString()).toBe('a')
    controller.abort(new Error('stop'))
    await expect(records.next()).rejects.toThrow('stop')
  })
})
