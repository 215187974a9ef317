import { spawnSync } from 'node:child_process'
import { closeSync, ftruncateSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { types } from 'node:util'
import { getHeapStatistics } from 'node:v8'
import { announceAccessMode, lookupFailure, nativeFunctions, nativeUnavailableReason } from '../../../common/native'
import { makeTmp } from '../../../testkit/stores/tmp'

/** The loader: the addon is there unless forced off, the switch works, the log line is said once. */
const tmp = makeTmp()
afterAll(tmp.cleanup)
const loader = join(__dirname, '..', '..', '..', 'common', 'native.js')

function inChild(env: NodeJS.ProcessEnv): { functions: boolean; reason: string; lines: string[] } {
  const script = `
    const n = require(${JSON.stringify(loader)})
    const lines = []
    n.announceAccessMode((l) => lines.push(l))
    n.announceAccessMode((l) => lines.push(l))
    process.stdout.write(JSON.stringify({ functions: n.nativeFunctions() !== undefined, reason: n.nativeUnavailableReason(), lines }))`
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, ...env } })
  expect(r.status).toBe(0)
  return JSON.parse(r.stdout) as { functions: boolean; reason: string; lines: string[] }
}

test('the addon is loaded unless ROSTORE_NATIVE=0 (CI builds it with npm ci)', () => {
  if (process.env['ROSTORE_NATIVE'] === '0') {
    expect(nativeFunctions()).toBeUndefined()
    expect(nativeUnavailableReason()).toMatch(/ROSTORE_NATIVE=0/)
  } else {
    expect(nativeUnavailableReason()).toBe('')
    expect(typeof nativeFunctions()?.createLookup).toBe('function')
  }
})

test('ROSTORE_NATIVE=0 forces the JavaScript path and says so once', () => {
  const off = inChild({ ROSTORE_NATIVE: '0' })
  expect(off.functions).toBe(false)
  expect(off.reason).toMatch(/ROSTORE_NATIVE=0/)
  expect(off.lines).toHaveLength(1)
  expect(JSON.parse(off.lines[0]!)).toMatchObject({ level: 'warn', event: 'store_access_mode', mode: 'pread' })
  if (process.env['ROSTORE_NATIVE'] !== '0') {
    const on = inChild({ ROSTORE_NATIVE: '1' })
    expect(on).toMatchObject({ functions: true, reason: '' })
    expect(JSON.parse(on.lines[0]!)).toMatchObject({ level: 'info', event: 'store_access_mode', mode: 'mmap' })
  }
})

test('announceAccessMode writes at most one line per process', () => {
  const lines: string[] = []
  announceAccessMode((l) => lines.push(l))
  announceAccessMode((l) => lines.push(l))
  expect(lines.length).toBeLessThanOrEqual(1)
})

test('lookup failure statuses name the damage and the record offset', () => {
  expect(lookupFailure(-1, 80)).toMatch(/record at offset 80 runs past the end/)
  expect(lookupFailure(-2, 81)).toMatch(/record at offset 81 fails its checksum/)
  expect(lookupFailure(-3, 82)).toMatch(/does not belong to its index entry/)
  expect(lookupFailure(-4, 83)).toMatch(/outside the data file/)
  expect(lookupFailure(-5, 84)).toMatch(/out of hash order/)
  expect(lookupFailure(-99, 0)).toMatch(/status -99/)
})

test('mapped windows are not counted as V8 external memory (counting them started full collections on every open)', async () => {
  const ops = nativeFunctions()
  if (!ops) return expect(nativeUnavailableReason()).toMatch(/ROSTORE_NATIVE=0/)
  const file = join(tmp.fresh(), 'sparse')
  const fd = openSync(file, 'w')
  ftruncateSync(fd, 3 * 2 ** 30) // sparse: no disk, no page is read
  closeSync(fd)
  const before = getHeapStatistics().external_memory
  const mapped = await ops.mapFile(file, true, 2 ** 30)
  const grown = getHeapStatistics().external_memory - before
  expect(mapped.windows.map((w) => w.byteLength)).toEqual([2 ** 30, 2 ** 30, 2 ** 30])
  expect(mapped.windows.every((w) => types.isSharedArrayBuffer(w))).toBe(true)
  expect(grown).toBeLessThan(2 ** 20)
  const view = Buffer.from(mapped.windows[2]!, 2 ** 30 - 4, 4)
  expect([...view]).toEqual([0, 0, 0, 0])
})

test('the addon checks its path arguments: not a string, a NUL byte, and an errno reported by name', async () => {
  const ops = nativeFunctions()
  if (!ops) return expect(nativeUnavailableReason()).toMatch(/ROSTORE_NATIVE=0/)
  const file = join(tmp.fresh(), 'small')
  closeSync(openSync(file, 'w'))
  await expect(ops.mapFile('a\0b', false, 65536)).rejects.toThrow(/path contains a NUL byte/)
  await expect(ops.mapFile(42 as unknown as string, false, 65536)).rejects.toThrow(/path must be a string/)
  await expect(ops.mapFile(file, 'yes' as unknown as boolean, 65536)).rejects.toThrow(/privateWritable must be a boolean/)
  await expect(ops.mapFile(file, false, 1000)).rejects.toThrow(/power of two/)
  await expect(ops.mapFile(join(tmp.fresh(), 'missing'), false, 65536)).rejects.toMatchObject({
    code: 'RO_IO',
    message: expect.stringMatching(/cannot open: .*\(ENOENT\)$/),
  })
  expect(ops.dropCache('a\0b')).toBe(false)
  expect(() => ops.dropCache(42 as unknown as string)).toThrow(/path must be a string/)
  expect(ops.dropCache(file)).toBe(true)
})
