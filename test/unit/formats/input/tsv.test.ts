import { writeFileSync } from 'node:fs'
import { readTsv } from '../../../../formats/input/tsv'
import { MAX_KEY_BYTES } from '../../../../formats/input/types'
import { collect, escapeRe, expectBadInput, expectStoreError, kv, plain, tempDir, writeInput } from './helpers'

const dir = tempDir()

describe('readTsv', () => {
  it('reads key<TAB>value lines with line numbers and byte offsets', async () => {
    const path = writeInput(dir, 'a.tsv', 'a\t1\nbb\t22\nccc\t333\n')
    expect((await collect(readTsv(path))).map(plain)).toEqual([
      { key: 'a', value: '1', keyKind: 'string', valueKind: 'string', line: 1, order: 0 },
      { key: 'bb', value: '22', keyKind: 'string', valueKind: 'string', line: 2, order: 4 },
      { key: 'ccc', value: '333', keyKind: 'string', valueKind: 'string', line: 3, order: 10 },
    ])
  })

  it('names the file in every record', async () => {
    const path = writeInput(dir, 'src.tsv', 'a\t1\n')
    const [rec] = await collect(readTsv(path))
    expect(rec?.source).toEqual({ path, line: 1 })
  })

  it('keeps tabs after the first one in the value, and empty values', async () => {
    const path = writeInput(dir, 'tabs.tsv', 'k\tv1\tv2\t\nempty\t\n')
    expect((await collect(readTsv(path))).map(kv)).toEqual([
      ['k', 'v1\tv2\t'],
      ['empty', ''],
    ])
  })

  it('reads a last line without a line feed', async () => {
    const path = writeInput(dir, 'nolf.tsv', 'a\t1\nb\t2')
    expect((await collect(readTsv(path))).map(kv)).toEqual([
      ['a', '1'],
      ['b', '2'],
    ])
  })

  it('drops the CR of CRLF line ends, only at the end of a line', async () => {
    const path = writeInput(dir, 'crlf.tsv', 'a\t1\r\nb\tx\ry\r\n')
    expect((await collect(readTsv(path))).map(kv)).toEqual([
      ['a', '1'],
      ['b', 'x\ry'],
    ])
  })

  it('keeps unicode and NUL bytes exactly', async () => {
    const path = writeInput(dir, 'uni.tsv', 'clé\tvaleur ✓ 🎉\nnul\ta\u0000b\n')
    const recs = await collect(readTsv(path))
    expect(recs.map(kv)).toEqual([
      ['clé', 'valeur ✓ 🎉'],
      ['nul', 'a\u0000b'],
    ])
    expect(recs[1]?.value).toEqual(Buffer.from([0x61, 0, 0x62]))
  })

  it('drops a UTF-8 byte order mark at the start of the file', async () => {
    const path = writeInput(dir, 'bom.tsv', '\ufeffa\t1\n')
    expect((await collect(readTsv(path))).map(kv)).toEqual([['a', '1']])
  })

  it('reads an empty file as no records', async () => {
    const path = writeInput(dir, 'empty.tsv', '')
    expect(await collect(readTsv(path))).toEqual([])
  })

  it('allows blank lines at the end of the file only', async () => {
    const path = writeInput(dir, 'trailing.tsv', 'a\t1\n\n\r\n')
    expect((await collect(readTsv(path))).map(kv)).toEqual([['a', '1']])
  })

  it('reads lines longer than a read chunk', async () => {
    const long = 'v'.repeat(3 * (1 << 20) + 5)
    const path = writeInput(dir, 'long.tsv', `a\t1\nbig\t${long}\nz\t2\n`)
    const recs = await collect(readTsv(path))
    expect(recs.map((r) => [r.key.toString(), r.value.length, r.source.line])).toEqual([
      ['a', 1, 1],
      ['big', long.length, 2],
      ['z', 1, 3],
    ])
  })

  describe('columns', () => {
    const path = writeInput(dir, 'cols.tsv', 'a\tb\tc\nd\te\tf\n')

    it('takes key and value columns by 1-based number', async () => {
      expect((await collect(readTsv(path, { keyField: '2', valueField: '3' }))).map(kv)).toEqual([
        ['b', 'c'],
        ['e', 'f'],
      ])
    })

    it('with only a value column, keys stay in column 1', async () => {
      expect((await collect(readTsv(path, { valueField: '3' }))).map(kv)).toEqual([
        ['a', 'c'],
        ['d', 'f'],
      ])
    })

    it('with only a key column, the value is every other column', async () => {
      expect((await collect(readTsv(path, { keyField: '2' }))).map(kv)).toEqual([
        ['b', 'a\tc'],
        ['e', 'd\tf'],
      ])
      expect((await collect(readTsv(path, { keyField: '3' }))).map(kv)).toEqual([
        ['c', 'a\tb'],
        ['f', 'd\te'],
      ])
    })

    it('reports a missing column with its line', async () => {
      const short = writeInput(dir, 'short.tsv', 'a\tb\tc\nd\te\n')
      await expectBadInput(
        () => readTsv(short, { keyField: '1', valueField: '3' }),
        `${short}:2: line has 2 columns, no column 3 for the value`,
      )
      await expectBadInput(() => readTsv(short, { keyField: '3' }), `${short}:2: line has 2 columns, no column 3 for the key`)
    })

    it('refuses a column option that is not a column number', async () => {
      await expectStoreError(() => collect(readTsv(path, { keyField: 'name' })), 'RO_BAD_OPTION', /--key-field .* not 'name'/)
      await expectStoreError(() => collect(readTsv(path, { valueField: '0' })), 'RO_BAD_OPTION', /--value-field .* not '0'/)
    })
  })

  describe('errors name the file and line', () => {
    it('a line without a tab', async () => {
      const path = writeInput(dir, 'notab.tsv', 'a\t1\nnotab\n')
      await expectBadInput(() => readTsv(path), `${path}:2: no tab separator`)
    })

    it('an empty line before more data', async () => {
      const path = writeInput(dir, 'gap.tsv', 'a\t1\n\nb\t2\n')
      await expectBadInput(() => readTsv(path), `${path}:2: empty line`)
    })

    it('invalid UTF-8', async () => {
      const path = writeInput(dir, 'latin1.tsv', Buffer.concat([Buffer.from('a\t1\nb\t2\nk\t'), Buffer.from([0xe9]), Buffer.from('\n')]))
      await expectBadInput(() => readTsv(path), `${path}:3: invalid UTF-8`)
    })

    it('an empty key', async () => {
      const path = writeInput(dir, 'emptykey.tsv', 'a\t1\n\tv\n')
      await expectBadInput(() => readTsv(path), `${path}:2: empty key`)
    })

    it('a key over the maximum length', async () => {
      const path = writeInput(dir, 'longkey.tsv', `${'k'.repeat(MAX_KEY_BYTES)}\tok\n${'k'.repeat(MAX_KEY_BYTES + 1)}\tv\n`)
      await expectBadInput(() => readTsv(path), `${path}:2: key is ${MAX_KEY_BYTES + 1} bytes, longer than the maximum ${MAX_KEY_BYTES}`)
    })

    it('a missing file', async () => {
      const path = `${dir}/does-not-exist.tsv`
      await expectBadInput(() => readTsv(path), new RegExp(`^${escapeRe(path)}: cannot read file: ENOENT`))
    })

    it('a directory', async () => {
      await expectBadInput(() => readTsv(dir), new RegExp(`^${escapeRe(dir)}: cannot read file: EISDIR`))
    })

    it('yields the good records before the bad line', async () => {
      const path = writeInput(dir, 'partial.tsv', 'a\t1\nb\t2\nbad\n')
      const seen: string[] = []
      await expectBadInput(async function* () {
        for await (const rec of readTsv(path)) {
          seen.push(rec.key.toString())
          yield rec
        }
      }, `${path}:3: no tab separator`)
      expect(seen).toEqual(['a', 'b'])
    })
  })

  describe('laziness and cancellation', () => {
    it('does not open the file before the first pull', async () => {
      const path = `${dir}/created-after-the-reader.tsv`
      const records = readTsv(path)
      writeFileSync(path, 'late\t1\n')
      expect((await collect(records)).map(kv)).toEqual([['late', '1']])
    })

    it('stops at the next record once the signal aborts', async () => {
      const path = writeInput(dir, 'abort.tsv', 'a\t1\nb\t2\nc\t3\n')
      const controller = new AbortController()
      const seen: string[] = []
      const err = await collect(
        (async function* () {
          for await (const rec of readTsv(path, { signal: controller.signal })) {
            seen.push(rec.key.toString())
            controller.abort(new Error('stop'))
            yield rec
          }
        })(),
      ).catch((e: unknown) => e)
      expect(err).toEqual(new Error('stop'))
      expect(seen).toEqual(['a'])
    })

    it('refuses to start with an aborted signal', async () => {
      const path = writeInput(dir, 'aborted.tsv', 'a\t1\n')
      await expect(collect(readTsv(path, { signal: AbortSignal.abort() }))).rejects.toMatchObject({ name: 'AbortError' })
    })
  })
})
