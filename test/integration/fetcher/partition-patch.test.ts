import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { installByPatches, rebuildWidth, type PatchPlan } from '../../../fetcher/partition-patch'
import { readManifest } from '../../../formats/store/layout/manifest-io'
import { PATCH_CLUSTER, patchBuilds } from '../../../testkit/stores/patch-builds'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp('rostore-install-patches-')
afterAll(tmp.cleanup)
const builds = patchBuilds(tmp.dir, PATCH_CLUSTER, { chunks: 2, workers: 1 })
const path = builds.path
const build = (recs: Map<string, string>, version: number, base?: string): Promise<string> =>
  builds.build(recs, version, base === undefined ? {} : { base })

describe('installByPatches', () => {
  test('rebuilds at once on several threads: every partition as the build wrote it, a bad patch falls back, results in plan order', async () => {
    const v1 = new Map(Array.from({ length: 600 }, (_, i) => [`key-${i}`, `value ${i} `.repeat(1 + (i % 9))]))
    const v2 = new Map(v1)
    for (let i = 0; i < 600; i += 13) v2.set(`key-${i}`, `changed ${i}`)
    const d1 = await build(v1, 1)
    const d2 = await build(v2, 2, d1)
    const m = await readManifest(d2)
    const plans: PatchPlan[] = m.partitionFiles.map((e) => ({ partition: e.partition, patch: e.patch!, baseDir: d1, live: true }))
    // Partition 5's patch arrives damaged (after its checksum would have been checked).
    const bad = m.partitionFiles[5]!.patch!.name
    const destDir = path('dest')
    mkdirSync(destDir)
    const r = await installByPatches(
      {
        destDir,
        manifest: m,
        download: (e) => {
          copyFileSync(join(d2, e.name), join(destDir, e.name))
          if (e.name === bad) {
            const b = readFileSync(join(destDir, e.name))
            b.writeUInt8((b[b.length - 8] as number) ^ 0xff, b.length - 8)
            writeFileSync(join(destDir, e.name), b)
          }
          return Promise.resolve()
        },
        signal: new AbortController().signal,
      },
      plans,
      3,
    )
    expect(r.partitions).toEqual(plans.map((p) => p.partition).filter((p) => p !== 5))
    expect(r.fellBack.map((f) => f.partition)).toEqual([5])
    for (const e of m.partitionFiles)
      for (const f of e.files)
        if (e.partition !== 5) expect(readFileSync(join(destDir, f.name)).equals(readFileSync(join(d2, f.name)))).toBe(true)
    // Only the rebuilt files are left: no patch, no work directory.
    const rebuilt = m.partitionFiles.filter((e) => e.partition !== 5).flatMap((e) => e.files.map((f) => f.name))
    expect(readdirSync(destDir).sort()).toEqual(rebuilt.sort())
  })

  test('one rebuild at a time on 2 cores, at most 4', () => {
    expect([1, 2, 3, 8, 64].map((c) => rebuildWidth(c))).toEqual([1, 1, 2, 4, 4])
  })
})
