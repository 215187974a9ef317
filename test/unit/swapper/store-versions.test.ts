import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync, writeSync, closeSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { makeTmp } from '../../../testkit/stores/tmp'
import { StoreVersions } from '../../../swapper/store-versions'
import { DataDir } from '../../../swapper/data-dir'

const KEYS = 200
const value = (v: number, i: number): string => `v${v}:key-${i}:${'x'.repeat(i % 7)}`

async function source(root: string, v: number, opts: { store?: string; nodeId?: number } = {}): Promise<string> {
  const dir = join(root, 'src', `${opts.store ?? 'users'}-n${opts.nodeId ?? 0}-v${v}`)
  if (!existsSync(dir)) {
    const recs: [string, string][] = []
    for (let i = 0; i < KEYS; i++) recs.push([`key-${i}`, value(v, i)])
    await makeNodeDir(dir, recs, { store: opts.store ?? 'users', version: v, nodeId: opts.nodeId ?? 0, chunks: 2 })
  }
  return dir
}

function entries(dir: string): string[] {
  return readdirSync(dir).sort()
}

describe('StoreVersions (real node directories)', () => {
  const tmp = makeTmp('rostore-sv-')
  afterAll(() => tmp.cleanup())
  let n = 0
  const dataDir = (): string => {
    const d = join(tmp.dir, `data${n++}`)
    mkdirSync(d)
    return d
  }

  /** Versions of 'users' whose reader opens (directories) and closes (versions) are recorded. */
  async function countingOpens(opened: string[], closed: number[] = []): Promise<StoreVersions> {
    const { openServingReader } = await import('../../../formats/store/read/store-reader')
    return StoreVersions.open({
      dataDir: dataDir(),
      store: 'users',
      create: true,
      nodeId: 0,
      openReader: async (dir) => {
        opened.push(dir)
        const reader = await openServingReader(dir)
        const close = reader.close.bind(reader)
        reader.close = () => {
          closed.push(reader.metadata.version)
          close()
        }
        return reader
      },
    })
  }

  test('an installed version is opened at install time, so its swap opens nothing', async () => {
    const opened: string[] = []
    const sv = await countingOpens(opened)
    await sv.install(await source(tmp.dir, 1))
    expect(opened).toHaveLength(1)
    await sv.swap(1)
    expect(opened).toHaveLength(1)
    await sv.install(await source(tmp.dir, 2))
    await sv.install(await source(tmp.dir, 3))
    expect(opened).toHaveLength(3)
    // Only the newest install stays prepared: swapping to 2 opens it again.
    await sv.swap(2)
    expect(opened).toHaveLength(4)
    await sv.swap(3)
    expect(opened).toHaveLength(4)
    const lease = sv.serving.live.acquire()!
    expect(lease.reader.get('key-5')?.toString()).toBe(value(3, 5))
    lease.release()
    await sv.close()
  })

  test('the replaced version stays open as the rollback target: swapping back and forth opens nothing and serves the same reader', async () => {
    const opened: string[] = []
    const closed: number[] = []
    const sv = await countingOpens(opened, closed)
    for (const v of [1, 2]) await sv.install(await source(tmp.dir, v))
    await sv.swap(1) // 1 was let go when 2 was installed: opened again
    expect(opened).toHaveLength(3)
    const readerOf = (): unknown => {
      const lease = sv.serving.live.acquire()!
      lease.release()
      return lease.reader
    }
    const first = readerOf()
    // A request still reading version 1 while it is swapped away and back.
    const inFlight = sv.serving.live.acquire()!
    await sv.swap(2)
    const second = readerOf()
    expect(sv.serving.preparedVersions).toEqual([1])
    await sv.rollback()
    expect(readerOf()).toBe(first)
    expect(inFlight.reader.get('key-5')?.toString()).toBe(value(1, 5))
    inFlight.release()
    for (let i = 0; i < 5; i++) {
      await sv.swap(2)
      expect(readerOf()).toBe(second)
      await sv.swap(1)
      expect(readerOf()).toBe(first)
    }
    expect(opened).toHaveLength(3)
    expect(closed).toEqual([1])
    // A newer install lets the older target go once it is displaced; retention and close end the rest.
    await sv.install(await source(tmp.dir, 3))
    expect(sv.serving.preparedVersions.sort()).toEqual([2, 3])
    await sv.swap(3)
    expect(sv.serving.preparedVersions).toEqual([1])
    expect(closed).toEqual([1, 2])
    const lease = sv.serving.live.acquire()!
    expect(lease.reader.get('key-5')?.toString()).toBe(value(3, 5))
    lease.release()
    await sv.close()
    expect(closed.sort()).toEqual([1, 1, 2, 3])
  })

  test('install, swap, rollback, roll forward; reads follow the live version', async () => {
    const sv = await StoreVersions.open({ dataDir: dataDir(), store: 'users', create: true, nodeId: 0 })
    expect(sv.liveVersion).toBeUndefined()
    expect(sv.serving.live.acquire()).toBeUndefined()
    for (const v of [1, 2, 3]) {
      const r = await sv.install(await source(tmp.dir, v))
      expect(r).toMatchObject({ store: 'users', version: v, records: KEYS })
    }
    // Installed, not live.
    expect(sv.liveVersion).toBeUndefined()
    expect(sv.versions()).toEqual([1, 2, 3])

    const s1 = await sv.swap(3)
    expect(s1).toMatchObject({ from: undefined, to: 3, changed: true, kind: 'swap' })
    expect(readFileSync(join(sv.storeDir, 'LIVE'), 'utf8')).toBe('3\n')
    const lease = sv.serving.live.acquire()!
    expect(lease.reader.get('key-5')!.toString()).toBe(value(3, 5))
    lease.release()

    const r1 = await sv.rollback()
    expect(r1).toMatchObject({ from: 3, to: 2, kind: 'rollback' })
    const r2 = await sv.rollback()
    expect(r2).toMatchObject({ from: 2, to: 1 })
    await expect(sv.rollback()).rejects.toMatchObject({ code: 'RO_CONFLICT', message: expect.stringMatching(/no version older/) })
    // Rolled-back-from versions are kept: roll forward by name.
    await sv.idle()
    expect(sv.versions()).toEqual([1, 2, 3])
    expect(await sv.swap(3)).toMatchObject({ from: 1, to: 3 })
    expect(await sv.rollback(1)).toMatchObject({ from: 3, to: 1 })
    await expect(sv.rollback(1)).rejects.toMatchObject({ code: 'RO_CONFLICT' })
    await expect(sv.rollback(9)).rejects.toMatchObject({ code: 'RO_NOT_FOUND' })
    await expect(sv.swap(9)).rejects.toMatchObject({ code: 'RO_NOT_FOUND' })
    // Swapping to the live version is a no-op.
    expect(await sv.swap(1)).toMatchObject({ changed: false })
    const l = sv.serving.live.acquire()!
    expect(l.reader.get('key-7')!.toString()).toBe(value(1, 7))
    l.release()
    await sv.close()
  })

  test('retention keeps exactly live + K backups, after the flip, off the caller', async () => {
    for (const keep of [0, 1, 2, 3]) {
      const dd = dataDir()
      const sv = await StoreVersions.open({ dataDir: dd, store: 'users', create: true, keepVersions: keep })
      for (let v = 1; v <= 6; v++) {
        await sv.install(await source(tmp.dir, v))
        await sv.swap(v)
      }
      await sv.idle()
      const expected = Array.from({ length: Math.min(6, keep + 1) }, (_, i) => 6 - i).sort((a, b) => a - b)
      expect(sv.versions()).toEqual(expected)
      expect(entries(sv.storeDir)).toEqual(['LIVE', ...expected.map((v) => `version-${v}`)].sort())
      await sv.close()
    }
  })

  test('retention never deletes versions newer than live (rolled back from, or staged)', async () => {
    const sv = await StoreVersions.open({ dataDir: dataDir(), store: 'users', create: true, keepVersions: 1 })
    for (let v = 1; v <= 4; v++) await sv.install(await source(tmp.dir, v))
    await sv.swap(4)
    await sv.idle()
    expect(sv.versions()).toEqual([3, 4])
    await sv.rollback()
    await sv.idle()
    expect(sv.versions()).toEqual([3, 4])
    await sv.install(await source(tmp.dir, 5))
    await sv.swap(3) // no-op
    await sv.idle()
    expect(sv.versions()).toEqual([3, 4, 5])
    await sv.close()
  })

  test('delete refuses the live version and unknown versions', async () => {
    const sv = await StoreVersions.open({ dataDir: dataDir(), store: 'users', create: true })
    await sv.install(await source(tmp.dir, 1))
    await sv.install(await source(tmp.dir, 2))
    await sv.swap(2)
    await expect(sv.deleteVersion(2)).rejects.toMatchObject({ code: 'RO_CONFLICT' })
    await expect(sv.deleteVersion(7)).rejects.toMatchObject({ code: 'RO_NOT_FOUND' })
    await sv.deleteVersion(1)
    expect(sv.versions()).toEqual([2])
    expect(entries(sv.storeDir)).toEqual(['LIVE', 'version-2'])
    await expect(sv.rollback()).rejects.toMatchObject({ code: 'RO_CONFLICT' })
    await sv.close()
  })

  test('install refuses duplicates, other stores, other nodes, relative paths', async () => {
    const sv = await StoreVersions.open({ dataDir: dataDir(), store: 'users', create: true, nodeId: 0 })
    await sv.install(await source(tmp.dir, 1))
    await expect(sv.install(await source(tmp.dir, 1))).rejects.toMatchObject({ code: 'RO_CONFLICT' })
    await expect(sv.install(await source(tmp.dir, 2, { store: 'orders' }))).rejects.toMatchObject({ code: 'RO_CONFLICT' })
    await expect(sv.install(await source(tmp.dir, 2, { nodeId: 1 }))).rejects.toMatchObject({ code: 'RO_CONFLICT' })
    await expect(sv.install('relative/dir')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(sv.install(join(tmp.dir, 'nowhere'))).rejects.toMatchObject({ code: 'RO_NOT_FOUND' })
    expect(entries(sv.storeDir)).toEqual(['version-1'])
    await sv.close()
  })

  test('a version whose checksum does not verify is refused and leaves nothing behind', async () => {
    const src = join(tmp.dir, 'corrupt-src')
    const recs: [string, string][] = Array.from({ length: 50 }, (_, i) => [`k${i}`, `value-${i}`])
    await makeNodeDir(src, recs, { store: 'users', version: 7, chunks: 1 })
    // Flip one byte in the middle of the data file (same size, different checksum).
    const data = join(src, '0.data')
    const fd = openSync(data, 'r+')
    writeSync(fd, Buffer.from('Z'), 0, 1, Math.floor(statSync(data).size / 2))
    closeSync(fd)
    const sv = await StoreVersions.open({ dataDir: dataDir(), store: 'users', create: true })
    await expect(sv.install(src)).rejects.toMatchObject({ code: 'RO_CHECKSUM_MISMATCH' })
    expect(entries(sv.storeDir)).toEqual([])
    expect(sv.versions()).toEqual([])
    await sv.close()
  })

  test('a symlinked chunk file is refused', async () => {
    const src = join(tmp.dir, 'symlink-src')
    await makeNodeDir(src, [['a', 'b']], { store: 'users', version: 1, chunks: 1 })
    const { renameSync, symlinkSync } = await import('node:fs')
    renameSync(join(src, '0.data'), join(tmp.dir, 'elsewhere.data'))
    symlinkSync(join(tmp.dir, 'elsewhere.data'), join(src, '0.data'))
    const sv = await StoreVersions.open({ dataDir: dataDir(), store: 'users', create: true })
    await expect(sv.install(src)).rejects.toMatchObject({ code: 'RO_BAD_FORMAT' })
    expect(entries(sv.storeDir)).toEqual([])
    await sv.close()
  })

  test('hard-link install shares the inodes', async () => {
    const src = await source(tmp.dir, 1)
    const sv = await StoreVersions.open({ dataDir: dataDir(), store: 'users', create: true })
    await sv.install(src, { link: true })
    expect(statSync(join(sv.versionDir(1), '0.data')).ino).toBe(statSync(join(src, '0.data')).ino)
    await sv.close()
  })

  test('cancelled install leaves nothing behind', async () => {
    const sv = await StoreVersions.open({ dataDir: dataDir(), store: 'users', create: true })
    const ac = new AbortController()
    ac.abort()
    await expect(sv.install(await source(tmp.dir, 1), { signal: ac.signal })).rejects.toMatchObject({ code: 'RO_ABORTED' })
    expect(entries(sv.storeDir)).toEqual([])
    await sv.close()
  })

  test('stale mark persists across reopen', async () => {
    const dd = dataDir()
    const sv = await StoreVersions.open({ dataDir: dd, store: 'users', create: true })
    await sv.setStale('push failed')
    expect(sv.stale?.reason).toBe('push failed')
    await sv.close()
    const again = await StoreVersions.open({ dataDir: dd, store: 'users' })
    expect(again.stale?.reason).toBe('push failed')
    await again.setStale(undefined)
    expect(again.stale).toBeUndefined()
    expect(existsSync(join(dd, 'users', 'STALE'))).toBe(false)
    await again.close()
  })

  test('reopen after a crash-like state serves the pointed version and cleans up', async () => {
    const dd = dataDir()
    const sv = await StoreVersions.open({ dataDir: dd, store: 'users', create: true })
    for (const v of [1, 2]) await sv.install(await source(tmp.dir, v))
    await sv.swap(2)
    await sv.close()
    // Leftovers of an interrupted install, pointer write and delete.
    mkdirSync(join(dd, 'users', '.tmp-install-9-x-y'))
    writeFileSync(join(dd, 'users', '.tmp-install-9-x-y', '0.data'), 'half')
    writeFileSync(join(dd, 'users', '.tmp-file-9-x-y'), '1')
    mkdirSync(join(dd, 'users', '.trash-version-0-9-x-y'))
    const again = await StoreVersions.open({ dataDir: dd, store: 'users' })
    expect(again.liveVersion).toBe(2)
    expect(entries(again.storeDir)).toEqual(['LIVE', 'version-1', 'version-2'])
    const l = again.serving.live.acquire()!
    expect(l.reader.get('key-1')!.toString()).toBe(value(2, 1))
    l.release()
    await again.close()
  })

  test('concurrent readers during swaps never see an error or a closed reader', async () => {
    const sv = await StoreVersions.open({ dataDir: dataDir(), store: 'users', create: true })
    for (const v of [1, 2, 3]) await sv.install(await source(tmp.dir, v))
    await sv.swap(1)
    let stop = false
    let reads = 0
    const reader = async (): Promise<void> => {
      while (!stop) {
        const lease = sv.serving.live.acquire()!
        // Hold the lease across a turn of the event loop, like a request being answered.
        await new Promise((r) => setImmediate(r))
        const vals = lease.reader.getMany(['key-1', 'key-2', 'key-150'])
        for (const [j, k] of [1, 2, 150].entries()) expect(vals[j]!.toString()).toBe(value(lease.version, k))
        lease.release()
        reads++
      }
    }
    const readers = Array.from({ length: 8 }, reader)
    for (let i = 0; i < 60; i++) {
      if (i % 3 === 2) await sv.rollback()
      else await sv.swap((i % 3) + 2 > 3 ? 1 : (i % 3) + 2)
    }
    stop = true
    await Promise.all(readers)
    expect(reads).toBeGreaterThan(60)
    await sv.serving.live.drained()
    expect(sv.serving.live.retiringCount).toBe(0)
    await sv.close()
  })

  test('DataDir opens existing stores, skips unsafe names, creates new ones', async () => {
    const dd = dataDir()
    const sv = await StoreVersions.open({ dataDir: dd, store: 'users', create: true })
    await sv.install(await source(tmp.dir, 1))
    await sv.swap(1)
    await sv.close()
    mkdirSync(join(dd, 'bad name'))
    const d = await DataDir.open({ dir: dd, nodeId: 0 })
    expect(d.all().map((s) => s.store)).toEqual(['users'])
    expect(d.get('users')!.serving.live.version).toBe(1)
    const orders = await d.getOrCreate('orders')
    expect(orders.liveVersion).toBeUndefined()
    expect(d.get('orders')).toBe(orders)
    await expect(d.getOrCreate('../x')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    mkdirSync(join(dd, 'late'))
    expect(await d.rescan()).toEqual(['late'])
    await d.close()
  })
})
