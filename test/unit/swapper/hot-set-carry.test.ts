import { nativeFunctions } from '../../../common/native'
import { LocalServingStore } from '../../../swapper/local-serving'
import { readerOpener, type OpenReader } from '../../../swapper/open-version'
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

/** The records the tests make hot: read once through the live version 1 of `st`. */
const hot = Array.from({ length: 200 }, (_, n) => keyOf(n * 61))

async function readHotSet(st: LocalServingStore): Promise<void> {
  const lease = st.live.acquire()!
  try {
    for (const k of hot) expect((await lease.reader.getAsync(k))?.toString()).toMatch(/^v1-/)
  } finally {
    lease.release()
  }
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
      await readHotSet(st)
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

describeNative('a worker that did not carry the hot set', () => {
  test('sees it at its swap: its residency view is refreshed then, not at its next period', async () => {
    const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined }
    // The second worker never refreshes on its own (period 0): only the swap can refresh it.
    const noPeriod: OpenReader = async (dir) =>
      (await import('../../../formats/store/read/store-reader')).openServingReader(dir, { residencyRefreshMs: 0 })
    const first = new LocalServingStore({ store: 'hot', openReader: readerOpener(), log: quiet, carryHotSet: true })
    const second = new LocalServingStore({ store: 'hot', openReader: noPeriod, log: quiet, carryHotSet: false })
    try {
      const [d1, d2] = [await version(1), await version(2)]
      await first.activate(1, d1)
      await second.activate(1, d1)
      await readHotSet(first)
      // The second opens version 2 while it is cold; the first then carries the hot set into it.
      await second.prepare(2, d2)
      await first.prepare(2, d2)
      await second.activate(2, d2)
      const next = second.live.acquire()!
      try {
        expect(next.reader.metadata.version).toBe(2)
        await waitFor(() => next.reader.residency()!.residentPages >= hot.length)
        const cold0 = next.reader.residency()!.coldReads
        await next.reader.warm(hot)
        expect(next.reader.residency()!.coldReads - cold0).toBe(0)
      } finally {
        next.release()
      }
    } finally {
      await first.close()
      await second.close()
    }
  })
})

/** Resolves once `ok()` holds; fails after 30 s of polling (a progress wait, not a timing assertion). */
async function waitFor(ok: () => boolean): Promise<void> {
  for (let n = 0; n < 3000 && !ok(); n++) await new Promise((r) => setTimeout(r, 10))
  expect(ok()).toBe(true)
}
