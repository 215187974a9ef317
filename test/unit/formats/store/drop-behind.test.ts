import { closeSync, fsyncSync, openSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { nativeFunctions } from '../../../../common/native'
import { PartWriter } from '../../../../fetcher/transfer/part-writer'
import { checksumFile } from '../../../../formats/store/chunk/checksum'
import { walkRecords } from '../../../../formats/store/scan/record-walk'
import { HEADER_SIZE } from '../../../../formats/store/chunk/header'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { evictTree } from '../../../../testkit/stores/page-cache'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * Streaming I/O past the page cache (native/io/drop-behind.c): a fetch's writes, a verify's
 * reads. What they touch must not stay cached, or a version as large as the live one
 * evicts the live version's hot pages; the bytes and checksums are those of the plain path.
 */
const tmp = makeTmp()
afterAll(tmp.cleanup)

const native = nativeFunctions()
const describeNative = native ? describe : describe.skip

/** The share of a file's pages in the page cache (mincore on a fresh mapping). */
async function cachedShare(path: string): Promise<number> {
  const n = native!
  const m = await n.mapFile(path, false, 1 << 30)
  const vec = new Uint8Array(Math.ceil(m.size / 4096))
  const resident = await n.refreshResidency(m.windows, vec)
  return resident / vec.length
}

async function writeThrough(path: string, bytes: Buffer, dropBehind: boolean): Promise<void> {
  const fh = await open(path, 'w')
  try {
    const w = new PartWriter(fh, 0, { dropBehind })
    for (let at = 0; at < bytes.length; at += 64 << 10) await w.write(bytes.subarray(at, at + (64 << 10)))
    await w.flush()
    await fh.sync()
    w.dropAll()
  } finally {
    await fh.close()
  }
}

describeNative('drop-behind (the addon)', () => {
  const bytes = Buffer.alloc(40 << 20)
  for (let i = 0; i < bytes.length; i += 4096) bytes.writeUInt32LE((i * 2654435761) >>> 0, i)

  test('PartWriter with dropBehind writes the same bytes and leaves (almost) none cached; without, all stay', async () => {
    const dropped = join(tmp.dir, 'dropped.part')
    const kept = join(tmp.dir, 'kept.part')
    await writeThrough(dropped, bytes, true)
    await writeThrough(kept, bytes, false)
    expect(await cachedShare(dropped)).toBeLessThan(0.05)
    expect(await cachedShare(kept)).toBeGreaterThan(0.9)
    const [a, b] = await Promise.all([checksumFile(dropped), checksumFile(kept)])
    expect(a).toBe(b)
  })

  test('PartWriter resuming mid-window drops behind from there on', async () => {
    const path = join(tmp.dir, 'resumed.part')
    writeFileSync(path, bytes.subarray(0, 5 << 20))
    evictTree(tmp.dir)
    const fh = await open(path, 'r+')
    try {
      const w = new PartWriter(fh, 5 << 20, { dropBehind: true })
      await w.write(bytes.subarray(5 << 20))
      await w.flush()
      // Two windows behind the end are dropped before the file's fsync.
      expect(await cachedShare(path)).toBeLessThan(0.35)
      await fh.sync()
      w.dropAll()
    } finally {
      await fh.close()
    }
    expect(await cachedShare(path)).toBeLessThan(0.05)
    expect(await checksumFile(path)).toBe(await checksumFile(join(tmp.dir, 'kept.part')))
  })

  test('checksumFile with dropBehind: the same checksum, and the file read leaves the cache', async () => {
    const path = join(tmp.dir, 'read.bin')
    writeFileSync(path, bytes)
    // A fetched or staged file is fsynced before its verify: clean pages, which the advice drops.
    const fd = openSync(path, 'r')
    fsyncSync(fd)
    closeSync(fd)
    const plain = await checksumFile(path)
    expect(await cachedShare(path)).toBeGreaterThan(0.9)
    expect(await checksumFile(path, 'xxh64', { dropBehind: true })).toBe(plain)
    expect(await cachedShare(path)).toBeLessThan(0.05)
  })

  test('walkRecords with dropBehind walks the same records and leaves the data file uncached', async () => {
    const dir = tmp.fresh()
    await makeNodeDir(
      dir,
      Array.from({ length: 20_000 }, (_, i): [string, string] => [`k${i}`, `v${i}-${'y'.repeat(500)}`]),
      { chunks: 1 },
    )
    const file = join(dir, '0.data')
    evictTree(dir)
    const walk = async (drop: boolean): Promise<string[]> => {
      const fh = await open(file, 'r')
      try {
        const { size } = await fh.stat()
        return [...walkRecords(fh.fd, HEADER_SIZE, size, file, drop)].map((r) => `${r.offset}:${r.key.toString()}`)
      } finally {
        await fh.close()
      }
    }
    const plain = await walk(false)
    expect(await cachedShare(file)).toBeGreaterThan(0.9)
    expect(await walk(true)).toEqual(plain)
    expect(plain).toHaveLength(20_000)
    expect(await cachedShare(file)).toBeLessThan(0.05)
  })
})
