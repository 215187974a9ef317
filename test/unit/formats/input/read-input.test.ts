import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Table, tableToIPC, Utf8, vectorFromArray } from 'apache-arrow'
import { listInputFiles, readInput } from '../../../../formats/input/read-input'
import { INPUT_FORMATS, type InputFormat } from '../../../../formats/input/types'
import { collect, escapeRe, expectStoreError, kv, tempDir, writeInput } from './helpers'
import { writeParquet } from './write-parquet'

const dir = tempDir()

describe('readInput', () => {
  it('reads every format through one signature', async () => {
    const files: Record<InputFormat, string> = {
      tsv: writeInput(dir, 'a.tsv', 'k\tv\n'),
      csv: writeInput(dir, 'a.csv', 'key,value\nk,v\n'),
      jsonl: writeInput(dir, 'a.jsonl', '{"key":"k","value":"v"}\n'),
      parquet: await writeParquet(join(dir, 'a.parquet'), { key: 'VARCHAR', value: 'VARCHAR' }, [{ key: 'k', value: 'v' }]),
      arrow: writeInput(
        dir,
        'a.arrow',
        tableToIPC(new Table({ key: vectorFromArray(['k'], new Utf8()), value: vectorFromArray(['v'], new Utf8()) }), 'file'),
      ),
    }
    for (const format of INPUT_FORMATS) {
      expect([format, (await collect(readInput(files[format], format))).map(kv)]).toEqual([format, [['k', 'v']]])
    }
  })

  it('passes options through', async () => {
    const path = writeInput(dir, 'opts.tsv', 'a\tb\tc\n')
    expect((await collect(readInput(path, 'tsv', { keyField: '3', valueField: '1' }))).map(kv)).toEqual([['c', 'a']])
  })

  it('refuses an unknown format', () => {
    expect(() => readInput('x', 'xml' as InputFormat)).toThrow(RangeError)
  })
})

describe('listInputFiles', () => {
  const root = join(dir, 'inputs')
  mkdirSync(join(root, 'nested'), { recursive: true })
  const file = (name: string): string => {
    const path = join(root, name)
    writeFileSync(path, 'x')
    return path
  }
  const b = file('b.tsv')
  const a = file('a.tsv')
  const c10 = file('c10.tsv')
  const c2 = file('c2.tsv')
  file('.hidden.tsv')
  file('nested/deep.tsv')
  symlinkSync(a, join(root, 'link-to-a.tsv'))
  symlinkSync(join(root, 'gone'), join(root, 'dangling.tsv'))
  const single = writeInput(dir, 'single.tsv', 'x')

  it('expands a directory to its regular files, sorted by name, hidden files and subdirectories skipped', async () => {
    // A link to a file is read (here: a.tsv again, under its own name, is the same file).
    expect(await listInputFiles([root])).toEqual([a, b, c10, c2])
    const elsewhere = join(dir, 'elsewhere')
    mkdirSync(elsewhere)
    symlinkSync(single, join(elsewhere, 'link.tsv'))
    expect(await listInputFiles([elsewhere])).toEqual([join(elsewhere, 'link.tsv')])
  })

  it('keeps the order of the inputs and reads a file named twice once', async () => {
    const listed = await listInputFiles([single, join(root, 'b.tsv'), root, single])
    expect(listed[0]).toBe(single)
    expect(listed[1]).toBe(b)
    expect(listed.filter((p) => p === b)).toHaveLength(1)
    expect(listed.filter((p) => p === single)).toHaveLength(1)
  })

  it('names a missing input', async () => {
    const missing = join(dir, 'no-such-dir')
    await expectStoreError(
      () => listInputFiles([single, missing]),
      'RO_BAD_INPUT',
      new RegExp(`^${escapeRe(missing)}: cannot read file: ENOENT`),
    )
  })

  it('lists nothing for an empty directory', async () => {
    const empty = join(dir, 'empty-dir')
    mkdirSync(empty)
    expect(await listInputFiles([empty])).toEqual([])
  })
})
