import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { nativeFunctions } from '../../../../common/native'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * An mmap reader keeps no per-record state in the JS heap or in ArrayBuffers (the index
 * is searched where it is mapped); a pread reader holds 16 bytes per record. Measured in
 * a child process with --expose-gc, in bytes, not time.
 */
const tmp = makeTmp()
afterAll(tmp.cleanup)

const RECORDS = 200_000

function grownBy(dir: string, small: string, access: 'mmap' | 'pread'): { accessMode: string; grown: number; probe: number } {
  const child = join(__dirname, 'reader-memory-child.js')
  const r = spawnSync(process.execPath, ['--expose-gc', child, dir, small, access], { encoding: 'utf8', timeout: 120_000 })
  expect(r.status).toBe(0)
  return JSON.parse(r.stdout) as { accessMode: string; grown: number; probe: number }
}

test('opening a 200k-record store grows heap + ArrayBuffers by < 1 MiB in mmap mode, by the index in pread mode', async () => {
  const dir = tmp.fresh()
  await makeNodeDir(
    dir,
    Array.from({ length: RECORDS }, (_, i) => [`k${i}`, `v${i}`] as [string, string]),
    { chunks: 2 },
  )
  const small = tmp.fresh()
  await makeNodeDir(small, [['a', 'b']])
  const pread = grownBy(dir, small, 'pread')
  expect(pread.accessMode).toBe('pread')
  expect(pread.probe).toBe(2)
  // 16 bytes per record held, less whatever unrelated garbage the measurement's GC freed
  // (a few tens of KB): clearly per-record, where mmap stays under 5 bytes per record.
  expect(pread.grown).toBeGreaterThan(RECORDS * 12)
  if (!nativeFunctions()) return
  const mmap = grownBy(dir, small, 'mmap')
  expect(mmap.accessMode).toBe('mmap')
  expect(mmap.probe).toBe(2)
  // The radix tables (4 bytes per 32 records, 25 KB here) and the reader's scratch buffers.
  expect(mmap.grown).toBeLessThan(1 << 20)
})
