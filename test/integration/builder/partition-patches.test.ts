import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { readPatchSummary } from '../../../client/dump/diff-patch'
import { cliPath } from '../../../common/paths'
import { readManifest } from '../../../formats/store/layout/manifest-io'
import { applyPatch } from '../../../formats/store/patch/patch-apply'
import { PATCH_HEADER_SIZE } from '../../../formats/store/patch/patch-file'
import type { VersionManifest } from '../../../formats/store/layout/partition-files'
import { incompressibleRecords, patchAll, patchBuilds } from '../../../testkit/stores/patch-builds'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp('rostore-patches-')
afterAll(tmp.cleanup)
const { path, build } = patchBuilds(tmp.dir)
const initial = incompressibleRecords

/**
 * Every partition of `next` rebuilt from `baseFiles` (a directory of the base's partition
 * files) and its patch, into a new directory, compared byte for byte with the full build.
 */
async function rebuildAll(baseFiles: string, next: string, manifest: VersionManifest, indexBlockEntries?: number): Promise<string> {
  const out = path('rebuilt')
  mkdirSync(out)
  for (const entry of manifest.partitionFiles) {
    expect(entry.patch).toBeDefined()
    await applyPatch({
      baseDir: baseFiles,
      patchFile: join(next, entry.patch!.name),
      outDir: out,
      manifest,
      partition: entry.partition,
      ...(indexBlockEntries === undefined ? {} : { indexBlockEntries }),
    })
    for (const f of entry.files) expect(readFileSync(join(out, f.name)).equals(readFileSync(join(next, f.name)))).toBe(true)
  }
  expect(readdirSync(out).length).toBe(manifest.partitionFiles.reduce((s, e) => s + e.files.length, 0))
  return out
}

const opsOf = (m: VersionManifest): number => m.partitionFiles.reduce((s, e) => s + (e.patch?.ops ?? 0), 0)

describe('partition patches: base + patch = the full build, byte for byte', () => {
  test('added, changed and removed keys, empty values, gzip values', async () => {
    for (const compression of ['none', 'gzip'] as const) {
      const v1 = initial(600)
      const v2 = new Map(v1)
      for (let i = 0; i < 600; i += 10) v2.delete(`key-${i}`)
      for (let i = 1; i < 600; i += 10) v2.set(`key-${i}`, `changed ${i}`)
      for (let i = 2; i < 600; i += 20) v2.set(`key-${i}`, '')
      for (let i = 0; i < 40; i++) v2.set(`new-${i}`, i % 2 ? '' : `added ${i}`)
      const d1 = await build(v1, 1, { compression })
      const d2 = await build(v2, 2, { compression })
      const m = await patchAll(d1, d2)
      expect(m.base).toEqual({ version: 1, dataVersion: 1 })
      // 60 removed + 60 changed + 30 emptied + 40 added.
      expect(opsOf(m)).toBe(190)
      await rebuildAll(d1, d2, m)
    }
  })

  test('an empty patch, and a patch that removes everything', async () => {
    const v1 = initial(300)
    const d1 = await build(v1, 1)
    const same = await build(v1, 2)
    const m = await patchAll(d1, same)
    expect(opsOf(m)).toBe(0)
    await rebuildAll(d1, same, m)

    const none = await build(new Map([['only', 'one']]), 3)
    const cleared = await build(new Map(), 4)
    const m2 = await patchAll(none, cleared)
    expect(opsOf(m2)).toBe(1)
    await rebuildAll(none, cleared, m2)
    const empty = await build(new Map(), 5)
    const m3 = await patchAll(d1, empty)
    expect(opsOf(m3)).toBe(300)
    await rebuildAll(d1, empty, m3)
  })

  test('keys whose index prefixes collide, and the base index read a few entries at a time', async () => {
    // md5-collide-3 keeps 3 bits of the hash prefix: most operations land on a run of equal
    // prefixes, placed by the base records' keys; blocks of 3 entries end inside those runs.
    const v1 = initial(400)
    const v2 = new Map(v1)
    for (let i = 0; i < 400; i += 3) v2.set(`key-${i}`, `changed ${i}`)
    for (let i = 1; i < 400; i += 11) v2.delete(`key-${i}`)
    for (let i = 0; i < 60; i++) v2.set(`new-${i}`, i % 4 === 0 ? '' : `added ${i}`)
    const d1 = await build(v1, 1, { keyHash: 'md5-collide-3' })
    const d2 = await build(v2, 2, { keyHash: 'md5-collide-3' })
    const m = await patchAll(d1, d2)
    expect(opsOf(m)).toBeGreaterThan(150)
    await rebuildAll(d1, d2, m, 3)
    await rebuildAll(d1, d2, m, 1)
  })

  test('a chain v1 -> v2 -> v3, each patch applied to the files the previous one made; keys removed and re-added', async () => {
    const v1 = initial(400)
    const v2 = new Map(v1)
    for (let i = 0; i < 400; i += 7) v2.delete(`key-${i}`)
    const v3 = new Map(v2)
    for (let i = 0; i < 400; i += 7) v3.set(`key-${i}`, i % 14 ? `back ${i}` : (v1.get(`key-${i}`) as string))
    v3.set('key-1', 'v3')
    const d1 = await build(v1, 1)
    const d2 = await build(v2, 2)
    const d3 = await build(v3, 3)
    const r2 = await rebuildAll(d1, d2, await patchAll(d1, d2))
    const m3 = await patchAll(d2, d3)
    await rebuildAll(r2, d3, m3)
    // A patch is for its base only: v3's patch on v1's files is refused.
    const entry = m3.partitionFiles[0]!
    const out = path('wrong-base')
    mkdirSync(out)
    await expect(
      applyPatch({
        baseDir: d1,
        patchFile: join(d3, entry.patch!.name),
        outDir: out,
        manifest: { ...m3, base: { version: 1, dataVersion: 1 } },
        partition: 0,
      }),
    ).rejects.toMatchObject({ code: 'RO_CORRUPT' })
    expect(readdirSync(out)).toEqual([])
  })

  test('a patch with a flipped byte is refused and leaves no file behind', async () => {
    const v1 = initial(500)
    const v2 = new Map(v1)
    for (let i = 0; i < 500; i += 5) v2.set(`key-${i}`, `changed ${i}`)
    const d1 = await build(v1, 1)
    const d2 = await build(v2, 2)
    const m = await patchAll(d1, d2)
    const entry = m.partitionFiles.find((e) => (e.patch?.size ?? 0) > PATCH_HEADER_SIZE + 40)!
    const good = readFileSync(join(d2, entry.patch!.name))
    // In the header, in the middle of the body, on the last byte.
    for (const at of [20, PATCH_HEADER_SIZE + Math.floor((good.length - PATCH_HEADER_SIZE) / 2), good.length - 1]) {
      const bad = Buffer.from(good)
      bad[at] = (bad[at] as number) ^ 0x10
      const file = path('bad.patch')
      writeFileSync(file, bad)
      const out = path('out')
      mkdirSync(out)
      await expect(
        applyPatch({ baseDir: d1, patchFile: file, outDir: out, manifest: m, partition: entry.partition }),
      ).rejects.toMatchObject({
        code: expect.stringMatching(/^RO_(CORRUPT|BAD_FORMAT|CHECKSUM_MISMATCH)$/),
      })
      expect(readdirSync(out)).toEqual([])
    }
  })

  test('build --base writes the patches it is worth writing, and takes the base chunk count', async () => {
    const v1 = initial(2000)
    const d1 = await build(v1, 1)
    const v2 = new Map(v1)
    for (let i = 0; i < 2000; i += 50) v2.set(`key-${i}`, `changed ${i}`)
    const d2 = await build(v2, 2, { base: d1 })
    const m2 = await readManifest(d2)
    expect(m2.chunks).toBe(3)
    expect(m2.base).toEqual({ version: 1, dataVersion: 1 })
    expect(m2.partitionFiles.every((e) => e.patch !== undefined)).toBe(true)
    expect(opsOf(m2)).toBe(40)
    await rebuildAll(d1, d2, m2)
    // rostore diff --patch reads a patch: its operations, as the CLI prints them.
    const summaries = await Promise.all(m2.partitionFiles.map((e) => readPatchSummary(join(d2, e.patch!.name))))
    expect(summaries.reduce((s, x) => s + x.puts, 0)).toBe(40)
    expect(summaries.every((x) => x.deleted === 0 && x.baseDataVersion === 1 && x.dataVersion === 2)).toBe(true)
    const withOps = m2.partitionFiles.find((e) => e.patch!.ops > 0)!
    const cli = spawnSync(process.execPath, [cliPath(), 'diff', '--patch', join(d2, withOps.patch!.name), '--keys'], { encoding: 'utf8' })
    expect(cli.status).toBe(0)
    expect(cli.stdout.split('\n').filter((l) => l.startsWith('* key-')).length).toBe(withOps.patch!.ops)
    expect(cli.stdout).toMatch(
      new RegExp(
        `patch of partition ${withOps.partition}, data version 1 -> 2: put \\(added or changed\\) ${withOps.patch!.ops}, removed 0`,
      ),
    )
    // Every value changed: the patches would be as large as the files, so there are none.
    const v3 = new Map([...v1].map(([k, v]) => [k, `${v}!`]))
    const d3 = await build(v3, 3, { base: d2 })
    const m3 = await readManifest(d3)
    expect(m3.partitionFiles.filter((e) => e.patch !== undefined)).toEqual([])
    expect(readdirSync(d3).filter((n) => n.endsWith('.patch'))).toEqual([])
  })

  test("build --patch-only keeps the patches and the manifest, not the patched partitions' files; they rebuild as the full build", async () => {
    const v1 = initial(1500)
    const d1 = await build(v1, 1)
    const v2 = new Map(v1)
    for (let i = 0; i < 1500; i += 40) v2.delete(`key-${i}`)
    const full = await build(v2, 2, { base: d1 })
    const only = await build(v2, 2, { base: d1, patchOnly: true })
    const m = await readManifest(only)
    expect(m.partitionFiles.every((e) => e.patch !== undefined)).toBe(true)
    expect(
      readdirSync(only)
        .filter((n) => !n.endsWith('.patch'))
        .sort(),
    ).toEqual(['metadata.json'])
    const out = path('rebuilt')
    mkdirSync(out)
    for (const e of m.partitionFiles) {
      await applyPatch({ baseDir: d1, patchFile: join(only, e.patch!.name), outDir: out, manifest: m, partition: e.partition })
      for (const f of e.files) expect(readFileSync(join(out, f.name)).equals(readFileSync(join(full, f.name)))).toBe(true)
    }
  })
})
