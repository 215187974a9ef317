import { closeSync, fsyncSync, openSync, readSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { nativeFunctions } from '../../../../common/native'
import { KeepResident } from '../../../../formats/store/patch/keep-resident'
import { evictTree } from '../../../../testkit/stores/page-cache'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * A rebuild reads its live base once (formats/store/patch/keep-resident.ts): the base's
 * pages that were cached stay cached, the ones the read brought in leave.
 */
const tmp = makeTmp()
afterAll(tmp.cleanup)

const native = nativeFunctions()
const describeNative = native ? describe : describe.skip

/** Which of a file's pages are cached (mincore on a fresh mapping). */
async function residency(path: string): Promise<Uint8Array> {
  const m = await native!.mapFile(path, false, 1 << 30)
  const vec = new Uint8Array(Math.ceil(m.size / 4096))
  await native!.refreshResidency(m.windows, vec)
  return vec
}

describeNative('KeepResident (the addon)', () => {
  test('a whole read of the file leaves the pages cached before cached, and the others not', async () => {
    const path = join(tmp.dir, 'base.data')
    const size = 48 << 20
    const bytes = Buffer.alloc(size)
    for (let i = 0; i < size; i += 4096) bytes.writeUInt32LE((i * 2654435761) >>> 0, i)
    writeFileSync(path, bytes)
    const fd0 = openSync(path, 'r')
    fsyncSync(fd0)
    closeSync(fd0)
    evictTree(tmp.dir)
    const fd = openSync(path, 'r')
    try {
      // The hot half: the first 24 MiB, read before the rebuild.
      const buf = Buffer.alloc(1 << 20)
      for (let pos = 0; pos < size / 2; pos += buf.length) readSync(fd, buf, 0, buf.length, pos)
      const before = await residency(path)
      const hot = before.reduce((n, b) => n + (b & 1), 0)
      expect(hot).toBeGreaterThan(before.length / 3)
      expect(hot).toBeLessThan(before.length * 0.9)
      const keep = await KeepResident.snapshot(path)
      expect(keep).toBeDefined()
      for (let pos = 0; pos < size; pos += buf.length) {
        readSync(fd, buf, 0, buf.length, pos)
        keep!.passed(fd, pos + buf.length)
      }
      keep!.end(fd)
      const after = await residency(path)
      let stayed = 0
      let left = 0
      for (let p = 0; p < before.length; p++) {
        if ((before[p]! & 1) === 1) stayed += after[p]! & 1
        else left += 1 - (after[p]! & 1)
      }
      expect(stayed / hot).toBeGreaterThan(0.95)
      expect(left / (before.length - hot)).toBeGreaterThan(0.95)
    } finally {
      closeSync(fd)
    }
  })
})
