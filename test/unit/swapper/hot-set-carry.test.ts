import { nativeFunctions } from '../../../common/native'
import { LocalServingStore } from '../../../swapper/local-serving'
import { readerOpener } from '../../../swapper/open-version'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { evictTree } from '../../../testkit/stores/page-cache'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * A version prepared while another is live gets the live one's hot records warmed before
 * its swap (LocalServingStore.prepare → formats/store/read/hot-set.ts), unless told not to (the
 * serving workers other than the first).
 */
const tmp = makeTmp()
afterAll(tmp.cleanup)
const describeNative = nativeFunctions() ? describe : describe.skip
const keyOf = (i: number): string => `k-${i}`

async function version(v: number): Promise<string> {
  const dir = tmp.fresh()
  await makeNodeDir(
    dir,
    Array.from({ length: 20_000 }, (_, i): [string, string] => [keyOf(i), `v${v}-${i}-${'q'.repeat(800)}`]),
    { store: 'hot', version: v, chunks: 2 },
  )
  evictTree(dir)
  return dir
}

describeNative('hot set carried at prepare (the addon)', () => {
  test.each([true, false])('carryHotSet %s', async (carry) => {
    const events: { event: string; fields: Record<string, unknown> | undefined }[] = []
    const log = {
      info: (event: string, fields?: Record<string, unknown>) => events.push({ event, fields }),
      warn: () => undefined,
      error: () => undefined,
    }
    const st = new LocalServingStore({ store: 'hot', openReader: readerOpener(), log, carryHotSet: carry })
    try {
      const [d1, d2] = [await version(1), await version(2)]
      await st.activate(1, d1)
      const hot = Array.from({ length: 200 }, (_, n) => keyOf(n * 61))
      const lease = st.live.acquire()!
      for (const k of hot) expect((await lease.reader.getAsync(k))?.toString()).toMatch(/^v1-/)
      lease.release()
      await st.prepare(2, d2)
      const carried = events.find((e) => e.event === 'hot-set-carried')
      await st.activate(2, d2)
      const next = st.live.acquire()!
      try {
        expect(next.reader.metadata.version).toBe(2)
        const cold0 = next.reader.residency()!.coldReads
        await next.reader.warm(hot)
        const coldAfter = next.reader.residency()!.coldReads - cold0
        if (carry) {
          expect(carried?.fields).toMatchObject({ store: 'hot', version: 2 })
          expect(Number(carried?.fields?.['warmed'])).toBeGreaterThanOrEqual(200)
          expect(coldAfter).toBe(0)
        } else {
          expect(carried).toBeUndefined()
          expect(coldAfter).toBeGreaterThan(150)
        }
        expect((await next.reader.getAsync(hot[3]!))?.toString()).toMatch(/^v2-/)
      } finally {
        next.release()
      }
    } finally {
      await st.close()
    }
  })
})
