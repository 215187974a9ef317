import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { nativeFunctions } from '../../../../common/native'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * Values are views of the mapping: one a caller got before its version was retired must
 * keep its bytes after close() and after the files are deleted, and the mapping must go
 * away once no value references it (no leak). Run in a child process with --expose-gc.
 */
const tmp = makeTmp()
afterAll(tmp.cleanup)

test('values outlive close() and the deletion of their files; the mapping is released once they are unreachable', async () => {
  const dir = join(tmp.fresh(), 'version-1')
  await makeNodeDir(
    dir,
    Array.from({ length: 500 }, (_, i) => [`k${i}`, `value-${i}-${'z'.repeat(i % 300)}`] as [string, string]),
    { chunks: 1 },
  )
  const child = join(__dirname, 'value-lifetime-child.js')
  const r = spawnSync(process.execPath, ['--expose-gc', child, dir, '500'], { encoding: 'utf8', timeout: 60_000 })
  expect(r.stderr.split('\n').filter((l) => l && !l.includes('store_access_mode'))).toEqual([])
  expect(r.status).toBe(0)
  const report = JSON.parse(r.stdout) as Record<string, unknown>
  if (!nativeFunctions()) {
    // The pread reader copies values out of the file: nothing is mapped, values are plain Buffers.
    expect(report).toMatchObject({ accessMode: 'pread', gc: true, mappedAtFirst: false, intact: true })
    return
  }
  expect(report).toMatchObject({ accessMode: 'mmap', gc: true, mappedAtFirst: true, intact: true, mappedWhileHeld: true })
  expect(report['unmappedAfterRounds']).toBeGreaterThan(0)
})

test('a closed reader is unmapped without an explicit gc(): close() asks for the collection V8 would not start', async () => {
  const dir = join(tmp.fresh(), 'version-1')
  await makeNodeDir(
    dir,
    Array.from({ length: 100 }, (_, i) => [`k${i}`, `value-${i}`] as [string, string]),
    { chunks: 1 },
  )
  const child = join(__dirname, 'release-after-close-child.js')
  const r = spawnSync(process.execPath, [child, dir], { encoding: 'utf8', timeout: 60_000 })
  expect(r.stderr.split('\n').filter((l) => l && !l.includes('store_access_mode'))).toEqual([])
  expect(r.status).toBe(0)
  const report = JSON.parse(r.stdout) as Record<string, unknown>
  expect(report['hits']).toBe(100)
  if (!nativeFunctions()) return expect(report).toMatchObject({ accessMode: 'pread', mappedAtFirst: false })
  expect(report).toMatchObject({ accessMode: 'mmap', mappedAtFirst: true })
  expect(report['unmappedAfterTurns']).toBeGreaterThan(0)
})
