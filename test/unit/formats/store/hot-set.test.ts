import { carryHotSet, hotSetPartsOf } from '../../../../formats/store/read/hot-set'
import { nativeFunctions } from '../../../../common/native'
import { openStore, type StoreReader } from '../../../../formats/store/read/store-reader'
import { createHash } from 'node:crypto'
import { buildRing, heldPartitions, masterPartition } from '../../../../cluster/routing'
import { DEFAULT_PARTITIONED_LAYOUT, makeBuildOutput, makePartitionedNodeDir } from '../../../../testkit/stores/make-partitioned'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { evictTree } from '../../../../testkit/stores/page-cache'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * Carrying the hot set to the next version (formats/store/read/hot-set.ts): what the live
 * version has in memory is warmed in the next one before the swap, and nothing else.
 */
const tmp = makeTmp()
afterAll(tmp.cleanup)

const describeNative = nativeFunctions() ? describe : describe.skip
const N = 30_000
const keyOf = (i: number): string => `key-${i}`

async function version(version: number, chunks: number, records: number): Promise<string> {
  const dir = tmp.fresh()
  await makeNodeDir(
    dir,
    Array.from({ length: records }, (_, i): [string, string] => [keyOf(i), `v${version}:${i}|${'z'.repeat(900)}`]),
    { version, chunks },
  )
  evictTree(dir)
  return dir
}

/** Keys of `keys` whose records the reader's residency map still calls cold. */
async function coldOf(r: StoreReader, keys: readonly string[]): Promise<number> {
  const before = r.residency()!.coldReads
  await r.warm(keys)
  return r.residency()!.coldReads - before
}

describeNative('carryHotSet (the addon, files evicted)', () => {
  test.each([
    ['the same chunks', 2, 2],
    ['other chunk counts', 2, 3],
  ])('%s: the live reads are hot in the next version, the rest stays cold', async (_name, liveChunks, nextChunks) => {
    const live = await openStore(await version(1, liveChunks, N), { residencyRefreshMs: 0 })
    // The next version lost a tenth of the keys and gained others.
    const next = await openStore(await version(2, nextChunks, N + 3000), { residencyRefreshMs: 0 })
    try {
      const hotKeys = Array.from({ length: 300 }, (_, n) => keyOf(n * 97))
      for (const k of hotKeys) expect((await live.getAsync(k))?.toString()).toMatch(/^v1:/)
      const report = await carryHotSet(hotSetPartsOf(live)!, hotSetPartsOf(next)!)
      // Each hot record's page holds a few neighbours: at least the 300, far from all.
      expect(report.hot).toBeGreaterThanOrEqual(300)
      expect(report.hot).toBeLessThan(N / 4)
      expect(report.warmed).toBe(report.hot)
      expect(await coldOf(next, hotKeys)).toBe(0)
      const others = Array.from({ length: 300 }, (_, n) => keyOf(n * 97 + 45))
      expect(await coldOf(next, others)).toBeGreaterThan(200)
      // Warmed means the right values, read in place.
      expect(next.getMany(hotKeys.slice(0, 5)).map((v) => v?.toString().split('|')[0])).toEqual(
        hotKeys.slice(0, 5).map((k) => `v2:${k.slice(4)}`),
      )
    } finally {
      live.close()
      next.close()
    }
  })

  test('a live version with nothing in memory carries nothing; an aborted carry stops', async () => {
    const live = await openStore(await version(1, 2, N), { residencyRefreshMs: 0 })
    const next = await openStore(await version(2, 2, N), { residencyRefreshMs: 0 })
    try {
      const report = await carryHotSet(hotSetPartsOf(live)!, hotSetPartsOf(next)!)
      // Opening reads each chunk's first record: those pages are all that is in memory.
      expect(report.hot).toBeLessThan(20)
      const ctl = new AbortController()
      ctl.abort()
      await live.getManyAsync(Array.from({ length: 2000 }, (_, n) => keyOf(n * 13)))
      const stopped = await carryHotSet(hotSetPartsOf(live)!, hotSetPartsOf(next)!, { signal: ctl.signal })
      expect(stopped.warmed).toBe(0)
    } finally {
      live.close()
      next.close()
    }
  })

  test("readers without a residency map have no parts (pread, coldReads 'sync')", async () => {
    const dir = await version(1, 2, 1000)
    const pread = await openStore(dir, { access: 'pread' })
    const sync = await openStore(dir, { coldReads: 'sync' })
    expect(hotSetPartsOf(pread)).toBeUndefined()
    expect(hotSetPartsOf(sync)).toBeUndefined()
    pread.close()
    sync.close()
  })

  test('into a format-2 version: hot records of the held partitions are warmed, the others are not carried', async () => {
    const live = await openStore(await version(1, 2, N), { residencyRefreshMs: 0 })
    const build = tmp.fresh()
    const records = Array.from({ length: N }, (_, i): [string, string] => [keyOf(i), `v2:${i}|${'z'.repeat(900)}`])
    const nextDir = tmp.fresh()
    await makePartitionedNodeDir(build, await makeBuildOutput(build, records, { version: 2, chunks: 2 }), 0, nextDir)
    evictTree(nextDir)
    const next = await openStore(nextDir, { residencyRefreshMs: 0 })
    try {
      const held = heldPartitions(buildRing(DEFAULT_PARTITIONED_LAYOUT), 2, 0)
      const isHeld = (k: string): boolean => held.includes(masterPartition(createHash('md5').update(k).digest(), 6))
      const hotKeys = Array.from({ length: 300 }, (_, n) => keyOf(n * 97))
      await live.getManyAsync(hotKeys)
      const report = await carryHotSet(hotSetPartsOf(live)!, hotSetPartsOf(next)!)
      expect(report.hot).toBeGreaterThanOrEqual(300)
      // Node 0 holds 4 of the 6 partitions: about two thirds of the hot records are carried.
      expect(report.warmed).toBeLessThan(report.hot)
      expect(report.warmed).toBeGreaterThan(report.hot / 2)
      expect(await coldOf(next, hotKeys.filter(isHeld))).toBe(0)
      expect(next.getMany(hotKeys.slice(0, 20)).map((v) => v?.toString().split('|')[0])).toEqual(
        hotKeys.slice(0, 20).map((k) => (isHeld(k) ? `v2:${k.slice(4)}` : undefined)),
      )
    } finally {
      live.close()
      next.close()
    }
  })
})
