import { spawnSync } from 'node:child_process'
import { closeSync, existsSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { nativeFunctions } from '../../../common/native'
import { coldIoFor } from '../../../formats/store/read/cold-io'
import { jsStoreOps } from '../../../testkit/js-twins/store-ops'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { evictTree } from '../../../testkit/stores/page-cache'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The addon's io_uring warm-up (native/io/uring-reads.c): readRecords brings records' pages
 * of an evicted file into the page cache and marks them, a batch larger than the ring
 * included; reads past the end stop there; a thread that exits with reads in flight exits
 * cleanly. Where io_uring cannot be set up here, the tests of the ring are skipped and the
 * choice falls back to the pool (checked below either way).
 */
const tmp = makeTmp()
afterAll(() => {
  delete process.env['ROSTORE_COLD_IO']
  tmp.cleanup()
})
const native = nativeFunctions()
const uring = native !== undefined && native.uringProbe() === 0
const describeUring = uring ? describe : describe.skip
const PAGE = 4096
const SIZE = 8 << 20

test('the choice: io_uring where the ring can be set up, the pool without it or when ROSTORE_COLD_IO=pool', () => {
  delete process.env['ROSTORE_COLD_IO']
  expect(coldIoFor(jsStoreOps)).toBe('pool')
  if (native) expect(coldIoFor(native)).toBe(uring ? 'uring' : 'pool')
  process.env['ROSTORE_COLD_IO'] = 'pool'
  if (native) expect(coldIoFor(native)).toBe('pool')
  process.env['ROSTORE_COLD_IO'] = 'uring'
  expect(coldIoFor(jsStoreOps)).toBe('pool')
  delete process.env['ROSTORE_COLD_IO']
})

describeUring('readRecords (io_uring)', () => {
  const ops = native!
  /** A file of random bytes, evicted, opened for readRecords; its residency vector. */
  function coldFile(bytes: Buffer = randomBytes(SIZE)): { path: string; fd: number; vec: Uint8Array; size: number } {
    const dir = tmp.fresh()
    const path = join(dir, 'f.data')
    writeFileSync(path, bytes)
    expect(evictTree(dir)).toBe(1)
    const fd = ops.openRandom(path)
    expect(fd).toBeGreaterThanOrEqual(0)
    return { path, fd, vec: new Uint8Array(Math.ceil(bytes.length / PAGE)), size: bytes.length }
  }
  /** Pages of `path` in the page cache, as mincore sees them through a fresh mapping. */
  async function cached(path: string): Promise<Uint8Array> {
    const m = await ops.mapFile(path, false, 1 << 20)
    const vec = new Uint8Array(Math.ceil(m.size / PAGE))
    await ops.refreshResidency(m.windows, vec)
    return vec
  }

  test('a batch of 1000 records (more than the ring holds): their pages read into the cache and marked, once', async () => {
    const f = coldFile()
    const ranges = new Float64Array(3000)
    const pages = new Set<number>()
    for (let i = 0; i < 1000; i++) {
      const off = ((i * 7919) % (SIZE / 1024)) * 1024
      ranges.set([0, off, 1024], 3 * i)
      pages.add(Math.floor(off / PAGE))
    }
    expect((await cached(f.path)).reduce((a, b) => a + b, 0)).toBeLessThan(pages.size / 4)
    const fresh = await ops.readRecords([[f.fd, f.vec, f.size]], ranges, 1000)
    expect(fresh).toBe(pages.size)
    expect([...pages].every((p) => f.vec[p] === 1)).toBe(true)
    expect(f.vec.reduce((a, b) => a + b, 0)).toBe(pages.size)
    const inCache = await cached(f.path)
    expect([...pages].filter((p) => inCache[p] !== 1)).toEqual([])
    // Marked: asked again, nothing is new.
    expect(await ops.readRecords([[f.fd, f.vec, f.size]], ranges, 1000)).toBe(0)
    closeSync(f.fd)
  })

  test('length 0: the header is read, then the whole record (several reads for a long one); past the end stops there', async () => {
    const bytes = randomBytes(SIZE)
    const at = 3 * PAGE + 100
    bytes.writeUInt32LE(10, at)
    bytes.writeUInt32LE(200_000, at + 4) // 12 + 10 + 200000 bytes: pages 3 to 51
    const tail = SIZE - 20
    bytes.writeUInt32LE(0, tail)
    bytes.writeUInt32LE(1 << 30, tail + 4) // says it runs 1 GiB past the end of the file
    const f = coldFile(bytes)
    const ranges = Float64Array.from([0, at, 0, 0, tail, 0, 0, SIZE + 5, 100, 0, SIZE - 10, 5000])
    const fresh = await ops.readRecords([[f.fd, f.vec, f.size]], ranges, 4)
    const last = Math.floor((at + 12 + 10 + 200_000 - 1) / PAGE)
    const expected = new Set<number>([SIZE / PAGE - 1])
    for (let p = 3; p <= last; p++) expected.add(p)
    expect(fresh).toBe(expected.size)
    expect([...f.vec.keys()].filter((p) => f.vec[p] === 1)).toEqual([...expected].sort((a, b) => a - b))
    closeSync(f.fd)
  })

  test('preadRing reads the bytes asked for from an evicted file, short at its end; a bad descriptor rejects', async () => {
    const bytes = randomBytes(SIZE)
    const f = coldFile(bytes)
    const reads = Array.from({ length: 100 }, (_, i) => ((i * 7919) % (SIZE / 1024)) * 1024 + (i % 7))
    const bufs = reads.map(() => Buffer.alloc(1500))
    const got = await Promise.all(reads.map((at, i) => ops.preadRing(f.fd, bufs[i] as Buffer, at)))
    for (let i = 0; i < reads.length; i++) {
      const at = reads[i] as number
      const want = Math.min(1500, SIZE - at)
      expect(got[i]).toBe(want)
      expect((bufs[i] as Buffer).subarray(0, want).equals(bytes.subarray(at, at + want))).toBe(true)
    }
    const tail = Buffer.alloc(4096)
    expect(await ops.preadRing(f.fd, tail, SIZE - 100)).toBe(100)
    expect(tail.subarray(0, 100).equals(bytes.subarray(SIZE - 100))).toBe(true)
    expect(await ops.preadRing(f.fd, tail, SIZE + 10)).toBe(0)
    closeSync(f.fd)
    await expect(ops.preadRing(f.fd, tail, 0)).rejects.toMatchObject({ errno: 9 }) // EBADF
  })

  test('bad arguments are a TypeError; openRandom of a missing file is -ENOENT', () => {
    expect(() => ops.readRecords([], new Float64Array(3), 1)).toThrow(/readRecords/)
    expect(() => ops.readRecords([[0, new Uint8Array(1), 1]], Float64Array.from([1, 0, 0]), 1)).toThrow(/readRecords/)
    expect(ops.openRandom(join(tmp.dir, 'missing'))).toBe(-2)
  })

  test('worker threads have rings of their own; one that exits with reads in flight exits cleanly', () => {
    const f = coldFile()
    closeSync(f.fd)
    const addon = require.resolve(join(__dirname, '..', '..', '..', 'common', 'native.js'))
    const script = join(tmp.dir, 'uring-threads.js')
    writeFileSync(
      script,
      `const { Worker } = require('node:worker_threads')
       const body = \`
         const { parentPort, workerData } = require('node:worker_threads')
         const ops = require(${JSON.stringify(addon)}).nativeFunctions()
         const fd = ops.openRandom(workerData.path)
         const vec = new Uint8Array(${SIZE / PAGE})
         const ranges = new Float64Array(3 * 600)
         for (let i = 0; i < 600; i++) ranges.set([0, ((i * 7919 + workerData.seed) % ${SIZE / 1024}) * 1024, 1024], 3 * i)
         ops.readRecords([[fd, vec, ${SIZE}]], ranges, 600).then((n) => {
           parentPort.postMessage(n)
           // A second batch left in flight: the thread exits under it.
           ops.readRecords([[fd, vec.fill(0), ${SIZE}]], ranges, 600)
           process.exit(0)
         })\`
       async function once(seed) {
         const w = new Worker(body, { eval: true, workerData: { path: ${JSON.stringify(f.path)}, seed } })
         let n = 'no message'
         w.once('message', (m) => { n = m })
         await new Promise((resolve, reject) => { w.once('exit', resolve); w.once('error', reject) })
         return n
       }
       Promise.all([once(1), once(2), once(3)]).then((ns) => { console.log(JSON.stringify(ns)) })`,
    )
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000 })
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    const counts = JSON.parse(r.stdout) as number[]
    expect(counts).toHaveLength(3)
    for (const n of counts) expect(n).toBeGreaterThan(200)
  })
})

/** Runs a program with io_uring_setup refused (EPERM), as a seccomp filter or a container does. */
const NO_URING_C = `#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
  (void)argc;
  struct sock_filter f[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = { sizeof f / sizeof f[0], f };
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return 99;
  execv(argv[1], argv + 1);
  return 98;
}
`

const describeCc = native && existsSync('/usr/bin/cc') ? describe : describe.skip

describeCc('where io_uring is refused (a seccomp filter)', () => {
  test('ROSTORE_COLD_IO=uring falls back to the pool; cold reads still answer the right values', async () => {
    const dir = tmp.fresh()
    const wrapper = join(dir, 'no-uring')
    writeFileSync(`${wrapper}.c`, NO_URING_C)
    const cc = spawnSync('/usr/bin/cc', ['-O1', '-o', wrapper, `${wrapper}.c`], { encoding: 'utf8', timeout: 60_000 })
    expect(cc.stderr).toBe('')
    // A sandbox that forbids installing seccomp filters (exit 99) cannot run this check.
    const probe = spawnSync(wrapper, ['/bin/true'], { timeout: 10_000 })
    if (probe.status === 99) return
    expect(probe.status).toBe(0)
    const storeDir = join(dir, 'store')
    const rows = Array.from({ length: 3000 }, (_, i): [string, string] => [`k${i}`, `v${i}|${'z'.repeat(900)}`])
    await makeNodeDir(storeDir, rows, { chunks: 2 })
    expect(evictTree(storeDir)).toBeGreaterThan(0)
    const compiled = join(__dirname, '..', '..', '..')
    const script = `const { nativeFunctions } = require(${JSON.stringify(join(compiled, 'common', 'native.js'))})
      const { openStore } = require(${JSON.stringify(join(compiled, 'formats', 'store', 'read', 'store-reader.js'))})
      ;(async () => {
        const r = await openStore(${JSON.stringify(storeDir)}, { residencyRefreshMs: 0 })
        const keys = Array.from({ length: 200 }, (_, n) => 'k' + ((n * 37) % 3000))
        const values = await r.getManyAsync(keys)
        const right = values.every((v, n) => v.toString() === 'v' + ((n * 37) % 3000) + '|' + 'z'.repeat(900))
        const s = r.residency()
        r.close()
        console.log(JSON.stringify({ probe: nativeFunctions().uringProbe(), io: s.io, cold: s.coldReads, right }))
      })()`
    const run = (env: Record<string, string>): Record<string, unknown> => {
      const r = spawnSync(wrapper, [process.execPath, '-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } })
      expect(r.status).toBe(0)
      return JSON.parse(r.stdout.trim().split('\n').pop() as string) as Record<string, unknown>
    }
    expect(run({ ROSTORE_COLD_IO: 'uring' })).toEqual({ probe: 1, io: 'pool', cold: expect.any(Number), right: true })
    evictTree(storeDir)
    const unforced = run({ ROSTORE_COLD_IO: '' })
    expect(unforced).toMatchObject({ probe: 1, io: 'pool', right: true })
    expect(unforced['cold']).toBeGreaterThan(0)
  })
})
