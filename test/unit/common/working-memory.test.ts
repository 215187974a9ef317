import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { types } from 'node:util'
import { nativeFunctions } from '../../../common/native'
import { workingMemory } from '../../../common/working-memory'
import { makeTmp } from '../../../testkit/stores/tmp'

/** Working memory: zero-filled shared memory, from the addon's huge-page mapping or from V8. */
const tmp = makeTmp()
afterAll(tmp.cleanup)
const compiled = join(__dirname, '..', '..', '..', 'common')

test.each([
  ['under a huge page (always V8)', 100_000],
  ['several huge pages (the addon where it loads)', 5 * (2 << 20) + 12_345],
])('%s: the size asked for, zero-filled, writable, shared with typed arrays', (_name, bytes) => {
  const sab = workingMemory(bytes)
  // Jest's realm has its own SharedArrayBuffer constructor: ask util.types.
  expect(types.isSharedArrayBuffer(sab)).toBe(true)
  expect(sab.byteLength).toBe(bytes)
  const b = Buffer.from(sab)
  expect(b.every((x) => x === 0)).toBe(true)
  b[0] = 1
  b[bytes - 1] = 2
  const u = new Uint8Array(sab)
  expect([u[0], u[bytes - 1]]).toEqual([1, 2])
})

test('the addon maps it (unless ROSTORE_NATIVE=0), and refuses sizes it cannot map', () => {
  const native = nativeFunctions()
  if (process.env['ROSTORE_NATIVE'] === '0') {
    expect(native).toBeUndefined()
    return
  }
  expect(native!.anonBuffer(4 << 20).byteLength).toBe(4 << 20)
  expect(() => native!.anonBuffer(0)).toThrow(/1 to 2\^31-1 bytes/)
  expect(() => native!.anonBuffer(2 ** 31)).toThrow(/1 to 2\^31-1 bytes/)
})

test('memory made in a worker thread outlives the thread and is freed at exit without a crash', () => {
  // Node unloads an addon when the last thread that loaded it exits, before that thread's
  // buffers are freed: without the library pinned, the free called into unmapped code
  // (the build crashed with SIGSEGV when a worker finished).
  const script = join(tmp.dir, 'threads.js')
  writeFileSync(
    script,
    `const { Worker } = require('node:worker_threads')
     const body = \`
       const { parentPort } = require('node:worker_threads')
       const { workingMemory } = require(${JSON.stringify(join(compiled, 'working-memory.js'))})
       const kept = workingMemory(8 << 20)
       new Uint8Array(kept)[123] = 45
       const dropped = workingMemory(6 << 20)
       new Uint8Array(dropped).fill(9)
       parentPort.postMessage(kept)\`
     async function once() {
       const w = new Worker(body, { eval: true })
       const sab = await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
       await new Promise((resolve) => w.once('exit', resolve))
       return new Uint8Array(sab)[123]
     }
     ;(async () => {
       const seen = []
       for (let i = 0; i < 4; i++) seen.push(await once())
       process.stdout.write(JSON.stringify(seen))
     })()`,
  )
  const r = spawnSync(process.execPath, ['--expose-gc', script], { encoding: 'utf8', timeout: 60_000 })
  expect({ status: r.status, signal: r.signal }).toEqual({ status: 0, signal: null })
  expect(JSON.parse(r.stdout)).toEqual([45, 45, 45, 45])
})
