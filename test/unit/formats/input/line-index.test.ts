import { writeFileSync } from 'node:fs'
import { lineNumberAt } from '../../../../formats/input/line-index'
import { expectStoreError, tempDir, writeInput } from './helpers'

const dir = tempDir()

describe('lineNumberAt', () => {
  it('gives the 1-based line holding a byte offset', async () => {
    const path = writeInput(dir, 'a.txt', 'ab\ncd\n\nef')
    const lines = [1, 1, 1, 2, 2, 2, 3, 4, 4, 4]
    for (let offset = 0; offset < lines.length; offset++)
      expect([offset, await lineNumberAt(path, offset)]).toEqual([offset, lines[offset]])
  })

  it('counts across 1 MiB blocks, and again after the file changes', async () => {
    const line = `${'x'.repeat(99)}\n`
    const count = 25_000 // 2.5 MB: several blocks
    const path = writeInput(dir, 'big.txt', line.repeat(count))
    expect(await lineNumberAt(path, line.length * count - 1)).toBe(count)
    expect(await lineNumberAt(path, line.length * 12_345)).toBe(12_346)
    // Remembered counts are tied to the file's size and time: a rewrite is recounted.
    writeFileSync(path, `\n\n${line.repeat(count)}`)
    expect(await lineNumberAt(path, line.length * 12_345 + 2)).toBe(12_348)
  })

  it('names a missing file', async () => {
    await expectStoreError(() => lineNumberAt(`${dir}/nope`, 3), 'RO_BAD_INPUT', /nope: cannot read file: ENOENT/)
  })
})
