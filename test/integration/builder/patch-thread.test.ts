import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PatchThread, applyPatchOffThread } from '../../../formats/store/patch/patch-worker'
import { incompressibleRecords, patchAll, patchBuilds } from '../../../testkit/stores/patch-builds'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp('rostore-patch-thread-')
afterAll(tmp.cleanup)
const { path, build } = patchBuilds(tmp.dir)
const initial = incompressibleRecords

describe('partition patches rebuilt in a worker thread', () => {
  test('off the event loop (a worker thread, kept for the next rebuild): the same bytes, pace tokens asked of this thread, codes kept, cancellable', async () => {
    const v1 = initial(800)
    const v2 = new Map(v1)
    for (let i = 0; i < 800; i += 7) v2.set(`key-${i}`, `changed ${i}`)
    const d1 = await build(v1, 1)
    const d2 = await build(v2, 2)
    const m = await patchAll(d1, d2)
    const out = path('threaded')
    mkdirSync(out)
    let paced = 0
    const thread = new PatchThread()
    for (const entry of m.partitionFiles) {
      const applied = await thread.apply({
        baseDir: d1,
        patchFile: join(d2, entry.patch!.name),
        outDir: out,
        manifest: m,
        partition: entry.partition,
        pace: (n) => Promise.resolve(void (paced += n)),
      })
      expect(applied.files.map((f) => f.name)).toEqual(entry.files.map((f) => f.name))
      for (const f of entry.files) expect(readFileSync(join(out, f.name)).equals(readFileSync(join(d2, f.name)))).toBe(true)
    }
    expect(paced).toBeGreaterThan(0)
    const first = m.partitionFiles[0]!
    const wrongBase = path('threaded-wrong-base')
    mkdirSync(wrongBase)
    await expect(
      applyPatchOffThread({
        baseDir: d1,
        patchFile: join(d2, first.patch!.name),
        outDir: wrongBase,
        manifest: { ...m, base: { version: 9, dataVersion: 9 } },
        partition: first.partition,
      }),
    ).rejects.toMatchObject({ code: 'RO_CORRUPT' })
    // Cancelled while it waits for its first tokens.
    const ac = new AbortController()
    const cancelled = path('threaded-cancelled')
    mkdirSync(cancelled)
    await expect(
      applyPatchOffThread({
        baseDir: d1,
        patchFile: join(d2, first.patch!.name),
        outDir: cancelled,
        manifest: m,
        partition: first.partition,
        pace: () => {
          ac.abort()
          return new Promise(() => undefined)
        },
        signal: ac.signal,
      }),
    ).rejects.toMatchObject({ code: 'RO_ABORTED' })
    // The kept thread: a refused rebuild leaves it working; a cancelled one ends it, the next starts another.
    const again = path('threaded-again')
    mkdirSync(again)
    const rebuildFirst = (signal?: AbortSignal): Promise<unknown> =>
      thread.apply({
        baseDir: d1,
        patchFile: join(d2, first.patch!.name),
        outDir: again,
        manifest: m,
        partition: first.partition,
        ...(signal ? { signal } : {}),
      })
    await expect(
      thread.apply({
        baseDir: d1,
        patchFile: join(d2, first.patch!.name),
        outDir: again,
        manifest: { ...m, base: { version: 9, dataVersion: 9 } },
        partition: first.partition,
      }),
    ).rejects.toMatchObject({ code: 'RO_CORRUPT' })
    const stop = new AbortController()
    const cut = rebuildFirst(stop.signal)
    stop.abort()
    await expect(cut).rejects.toMatchObject({ code: 'RO_ABORTED' })
    await rebuildFirst()
    for (const f of first.files) expect(readFileSync(join(again, f.name)).equals(readFileSync(join(d2, f.name)))).toBe(true)
    await thread.close()
  })
})
