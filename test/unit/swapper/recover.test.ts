import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { recoverStoreDir } from '../../../swapper/disk/recover'
import { makeTmp } from '../../../testkit/stores/tmp'

/** A fake complete version directory: recovery only looks for metadata.json. */
function version(storeDir: string, v: number): void {
  mkdirSync(join(storeDir, `version-${v}`), { recursive: true })
  writeFileSync(join(storeDir, `version-${v}`, 'metadata.json'), '{}')
}

describe('recoverStoreDir', () => {
  const tmp = makeTmp('rostore-recover-')
  afterAll(() => tmp.cleanup())
  const fresh = tmp.fresh

  test('removes staging and trash leftovers, keeps versions and the pointer', async () => {
    const d = fresh()
    version(d, 1)
    version(d, 2)
    writeFileSync(join(d, 'LIVE'), '2\n')
    mkdirSync(join(d, '.tmp-install-1-a-b'))
    writeFileSync(join(d, '.tmp-install-1-a-b', '0.data'), 'partial')
    writeFileSync(join(d, '.tmp-file-1-a-b'), '1\n')
    mkdirSync(join(d, '.trash-version-0-1-a-b'))
    const r = await recoverStoreDir(d)
    expect(r.live).toBe(2)
    expect(r.versions).toEqual([1, 2])
    expect([...r.removed].sort()).toEqual(['.tmp-file-1-a-b', '.tmp-install-1-a-b', '.trash-version-0-1-a-b'])
    expect(r.repaired).toBeUndefined()
    expect(readdirSync(d).sort()).toEqual(['LIVE', 'version-1', 'version-2'])
  })

  test('missing LIVE: the newest complete version goes live', async () => {
    const d = fresh()
    version(d, 3)
    version(d, 8)
    mkdirSync(join(d, 'version-9')) // no metadata.json: not complete
    const r = await recoverStoreDir(d)
    expect(r.live).toBe(8)
    expect(r.incomplete).toEqual([9])
    expect(r.repaired).toMatch(/missing/)
    expect(readFileSync(join(d, 'LIVE'), 'utf8')).toBe('8\n')
  })

  test('LIVE naming an absent version or holding garbage is repaired', async () => {
    const d = fresh()
    version(d, 4)
    writeFileSync(join(d, 'LIVE'), '5\n')
    expect((await recoverStoreDir(d)).live).toBe(4)
    writeFileSync(join(d, 'LIVE'), 'garbage')
    const r = await recoverStoreDir(d)
    expect(r.live).toBe(4)
    expect(r.repaired).toMatch(/unreadable/)
  })

  test('no versions: nothing live, a dangling LIVE is removed', async () => {
    const d = fresh()
    expect((await recoverStoreDir(d)).live).toBeUndefined()
    writeFileSync(join(d, 'LIVE'), '1\n')
    const r = await recoverStoreDir(d)
    expect(r.live).toBeUndefined()
    expect(readdirSync(d)).toEqual([])
  })
})
