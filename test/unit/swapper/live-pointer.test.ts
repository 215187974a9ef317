import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readLivePointer, writeFileAtomic, writeLivePointer } from '../../../swapper/disk/live-pointer'
import { makeTmp } from '../../../testkit/stores/tmp'

describe('LIVE pointer', () => {
  const tmp = makeTmp('rostore-pointer-')
  afterAll(() => tmp.cleanup())
  const fresh = tmp.fresh

  test('absent, then written, then replaced', async () => {
    const d = fresh()
    expect(await readLivePointer(d)).toEqual({ kind: 'absent' })
    await writeLivePointer(d, 3)
    expect(await readLivePointer(d)).toEqual({ kind: 'ok', version: 3 })
    await writeLivePointer(d, 12)
    expect(await readLivePointer(d)).toEqual({ kind: 'ok', version: 12 })
    expect(readFileSync(join(d, 'LIVE'), 'utf8')).toBe('12\n')
    // No temp file is left behind.
    expect(readdirSync(d)).toEqual(['LIVE'])
  })

  test('garbage is reported as invalid, not trusted', async () => {
    const d = fresh()
    for (const text of ['', 'abc', '0', '-1', '../3', 'x'.repeat(100)]) {
      writeFileSync(join(d, 'LIVE'), text)
      expect((await readLivePointer(d)).kind).toBe('invalid')
    }
  })

  test('writeFileAtomic replaces a file whole', async () => {
    const d = fresh()
    await writeFileAtomic(d, 'STALE', 'one')
    await writeFileAtomic(d, 'STALE', 'two')
    expect(readFileSync(join(d, 'STALE'), 'utf8')).toBe('two')
    expect(readdirSync(d)).toEqual(['STALE'])
  })

  test('a failed write leaves no temp file', async () => {
    const d = fresh()
    mkdirSync(join(d, 'LIVE', 'blocker'), { recursive: true }) // rename over a non-empty dir fails
    await expect(writeLivePointer(d, 1)).rejects.toMatchObject({ code: 'RO_IO' })
    expect(readdirSync(d)).toEqual(['LIVE'])
  })
})
