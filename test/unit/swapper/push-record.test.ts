import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expectedVersion, parsePushRecord, readPushRecord, writePushRecord } from '../../../swapper/disk/push-record'
import { StoreVersions } from '../../../swapper/store-versions'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp('rostore-push-record-')
afterAll(() => tmp.cleanup())

const record = { version: 3, missed: [2, 0, 2], source: '/builds/v3', seq: 1700000000000, at: '2026-01-01T00:00:00.000Z' }

describe('push records', () => {
  test('parsed and validated: ids sorted and unique, unknown or bad fields refused', () => {
    expect(parsePushRecord(record)).toEqual({ ...record, missed: [0, 2] })
    expect(parsePushRecord({ version: 1, missed: [], seq: 5 })).toEqual({ version: 1, missed: [], seq: 5, at: '' })
    for (const bad of [
      null,
      [],
      { ...record, version: 0 },
      { ...record, version: '3' },
      { ...record, missed: [-1] },
      { ...record, missed: [1.5] },
      { ...record, missed: 'x' },
      { ...record, source: '' },
      { ...record, source: 'a\0b' },
      { ...record, seq: 0 },
      { ...record, at: 'x'.repeat(65) },
      { ...record, extra: 1 },
    ]) {
      expect(() => parsePushRecord(bad)).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST' }))
    }
  })

  test('kept on disk: written atomically, read back; a damaged file is RO_CORRUPT', async () => {
    const dir = tmp.fresh()
    expect(await readPushRecord(dir)).toBeUndefined()
    await writePushRecord(dir, parsePushRecord(record))
    expect(await readPushRecord(dir)).toEqual(parsePushRecord(record))
    writeFileSync(join(dir, 'PUSH'), '{"version": 3')
    await expect(readPushRecord(dir)).rejects.toMatchObject({ code: 'RO_CORRUPT' })
  })

  test('the expected version is for the nodes that missed the push only', () => {
    const r = parsePushRecord(record)
    expect(expectedVersion(r, 0)).toBe(3)
    expect(expectedVersion(r, 1)).toBeUndefined()
    expect(expectedVersion(undefined, 0)).toBeUndefined()
    expect(expectedVersion(r, undefined)).toBeUndefined()
  })

  test('a store is behind while its live version is not the one its record expects of it; newer records win', async () => {
    const dataDir = tmp.fresh()
    const src = (v: number): string => join(tmp.dir, `src-${v}`)
    for (const v of [1, 2]) {
      if (!existsSync(src(v))) await makeNodeDir(src(v), [[`k`, `v${v}`]], { store: 'users', version: v, nodeId: 0 })
    }
    mkdirSync(join(dataDir, 'users'))
    let sv = await StoreVersions.open({ dataDir, store: 'users', nodeId: 0, holdForPeers: true })
    expect(sv.stale?.reason).toMatch(/^starting/)
    // What reads see (the serving side) follows every change of the marks.
    expect(sv.serving.stale?.reason).toMatch(/^starting/)
    await sv.peersChecked()
    expect(sv.stale).toBeUndefined()
    expect(sv.serving.stale).toBeUndefined()
    await sv.install(src(1))
    await sv.swap(1)
    expect(await sv.setPushRecord({ version: 2, missed: [0], seq: 10, at: 'then' })).toBe(true)
    expect(sv.behind).toBe(2)
    expect(sv.serving.stale?.reason).toMatch(/^behind/)
    expect(sv.stale?.reason).toMatch(/^behind: version 2 went live on the other nodes/)
    // An older record does not replace it; an identical one is kept as it is.
    expect(await sv.setPushRecord({ version: 1, missed: [], seq: 9, at: 'before' })).toBe(false)
    expect(await sv.setPushRecord({ version: 2, missed: [0], seq: 10, at: 'then' })).toBe(true)
    expect(sv.behind).toBe(2)
    // It survives a restart (the node knows it is behind without asking anyone).
    await sv.close()
    sv = await StoreVersions.open({ dataDir, store: 'users', nodeId: 0 })
    expect(sv.behind).toBe(2)
    // Swapping to the expected version ends it.
    await sv.install(src(2))
    await sv.swap(2)
    expect(sv.behind).toBeUndefined()
    expect(sv.stale).toBeUndefined()
    // A newer push that did not miss this node ends it too.
    await sv.swap(1)
    expect(sv.behind).toBe(2)
    expect(await sv.setPushRecord({ version: 1, missed: [], seq: 11, at: 'rollback' })).toBe(true)
    expect(sv.behind).toBeUndefined()
    // An operator's STALE mark comes first.
    await sv.setStale('by hand')
    expect(sv.stale?.reason).toBe('by hand')
    await sv.close()
  })
})
