import { isStoreError } from '../../../common/errors'
import {
  checkStoreName,
  isTmpName,
  isTrashName,
  parseVersionDirName,
  parseVersionText,
  previousVersion,
  requestVersion,
  retentionVictims,
  tmpName,
  trashName,
  versionDirName,
} from '../../../swapper/disk/version-names'

describe('version names', () => {
  test('round trip', () => {
    for (const v of [1, 2, 10, 123456789, Number.MAX_SAFE_INTEGER]) expect(parseVersionDirName(versionDirName(v))).toBe(v)
  })

  test('other names are not versions', () => {
    for (const n of [
      'version-0',
      'version-01',
      'version--1',
      'version-1.5',
      'version-',
      'version-1x',
      'v1',
      '.tmp-version-1',
      'version-99999999999999999',
    ]) {
      expect(parseVersionDirName(n)).toBeUndefined()
    }
  })

  test('versionDirName refuses non-versions', () => {
    for (const v of [0, -1, 1.5, NaN, Number.MAX_SAFE_INTEGER + 1]) expect(() => versionDirName(v)).toThrow(RangeError)
  })

  test('parseVersionText', () => {
    expect(parseVersionText('7')).toBe(7)
    expect(parseVersionText(' 7\n')).toBe(7)
    for (const t of ['', '0', '07', '-7', '7a', '1e3', '0x10', '../7']) expect(parseVersionText(t)).toBeUndefined()
  })

  test('requestVersion accepts numbers and digit strings only', () => {
    expect(requestVersion(3)).toBe(3)
    expect(requestVersion('3')).toBe(3)
    for (const bad of [0, -2, 2.5, '2.5', '../1', null, undefined, {}, [1], true, '1'.repeat(20)]) {
      let err: unknown
      try {
        requestVersion(bad)
      } catch (e) {
        err = e
      }
      expect(isStoreError(err, 'RO_BAD_REQUEST')).toBe(true)
    }
  })
})

describe('store names', () => {
  test('safe names pass', () => {
    for (const n of ['users', 'a', 'A-b_c.d', '9lives', 'x'.repeat(128)]) expect(checkStoreName(n)).toBe(n)
  })

  test('traversal and odd names are refused with RO_BAD_REQUEST', () => {
    for (const n of ['', '.', '..', '../x', 'a/b', '/abs', 'a\\b', 'a..b', '.hidden', 'x'.repeat(129), 'a b', 'ü', 'a\0b', '-x']) {
      let err: unknown
      try {
        checkStoreName(n)
      } catch (e) {
        err = e
      }
      expect(isStoreError(err, 'RO_BAD_REQUEST')).toBe(true)
    }
  })
})

describe('staging and trash names', () => {
  test('are recognised and unique', () => {
    const a = tmpName('install')
    const b = tmpName('install')
    expect(a).not.toBe(b)
    expect(isTmpName(a)).toBe(true)
    expect(isTrashName(trashName('version-3'))).toBe(true)
    expect(isTmpName('version-3')).toBe(false)
    expect(() => tmpName('../x')).toThrow(RangeError)
  })
})

describe('rollback target and retention', () => {
  test('previousVersion is the newest older than live', () => {
    expect(previousVersion([1, 3, 5, 7], 5)).toBe(3)
    expect(previousVersion([5, 7], 5)).toBeUndefined()
    expect(previousVersion([], 5)).toBeUndefined()
  })

  test('keeps live, K older, and everything newer', () => {
    expect(retentionVictims([1, 2, 3, 4, 5], 5, 2)).toEqual([1, 2])
    expect(retentionVictims([1, 2, 3, 4, 5], 3, 1)).toEqual([1])
    expect(retentionVictims([1, 2, 3, 4, 5], 1, 0)).toEqual([])
    expect(retentionVictims([1, 2, 3, 4, 5], 5, 0)).toEqual([1, 2, 3, 4])
    expect(retentionVictims([2, 9], 9, 5)).toEqual([])
    expect(() => retentionVictims([1], 1, -1)).toThrow(RangeError)
  })
})
