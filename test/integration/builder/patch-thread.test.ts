import { mkdirSync, readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import { writePartitionPatches } from '../../../builder/partition-patches'
import { parseCluster, type Cluster } from '../../../cluster/cluster'
import { readManifest } from '../../../formats/store/layout/manifest-io'
import { PatchThread, applyPatchOffThread } from '../../../formats/store/patch/patch-worker'
import type { VersionManifest } from '../../../formats/store/layout/partition-files'
import { writeInput } from '../../../testkit/stores/input-files'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp('rostore-patch-thread-')
afterAll(tmp.cleanup)
let seq = 0
const path = (name: string): string => join(tmp.dir, `${seq++}-${name}`)

const cluster: Cluster = parseCluster({
  name: 'test',
  nodes: Array.from({ length: 3 }, (_, id) => ({
    id,
    host: '127.0.0.1',
    port: 7100 + id,
    partitions: Array.from({ length: 12 }, (_, p) => p).filter((p) => p % 3 === id),
  })),
})

type Records = Map<string, string>

/** Values that do not compress much, as real ones: a patch of every value is as large as the files. */
function initial(n: number): Records {
  return new Map(Array.from({ length: n }, (_, i) => [`key-${i}`, randomBytes(30 + (i % 150)).toString('base64')]))
}

async function build(
  recs: Records,
  version: number,
  o: { base?: string; compression?: 'none' | 'gzip'; patchOnly?: boolean; keyHash?: string } = {},
): Promise<string> {
  const file = path('in.tsv')
  await writeInput(file, 'tsv', [...recs])
  const output = path(`v${version}`)
  await buildStore({
    inputs: [file],
    format: 'tsv',
    cluster,
    store: 'st',
    output,
    version,
    replication: 2,
    layout: 'partitions',
    workers: 2,
    compression: o.compression ?? 'none',
    ...(o.keyHash !== undefined ? { keyHash: o.keyHash } : {}),
    // With a base, the chunk count comes from it.
    ...(o.base !== undefined ? { base: o.base } : { chunks: 3 }),
    ...(o.patchOnly === true ? { patchOnly: true } : {}),
  })
  return output
}

/** Patches of every partition of `next` against `base` (none dropped as too large). */
async function patchAll(base: string, next: string): Promise<VersionManifest> {
  return writePartitionPatches({ dir: base, manifest: await readManifest(base) }, next, await readManifest(next), Infinity)
}

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
