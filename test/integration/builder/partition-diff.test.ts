import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { HEADER_SIZE, INDEX_ENTRY_SIZE } from '../../../formats/store/chunk/header'
import { RECORD_HEADER_SIZE } from '../../../formats/store/chunk/record'
import { readManifest } from '../../../formats/store/layout/manifest-io'
import { applyPatch } from '../../../formats/store/patch/patch-apply'
import { patchBuilds, type Records } from '../../../testkit/stores/patch-builds'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * `build --base` diffs partitions in its worker threads by the index entries' hash
 * prefixes (builder/partition-diff.ts): keys sharing a prefix are ordered by their full
 * hash, and the base's bytes a patch carries are checked.
 */
const tmp = makeTmp('rostore-partition-diff-')
afterAll(tmp.cleanup)
const { path, build } = patchBuilds(tmp.dir, { nodes: 2, partitions: 4, replication: 1, port: 7200 }, { chunks: 2 })

const initial = (n: number): Records => new Map(Array.from({ length: n }, (_, i) => [`key-${i}`, `value ${i} `.repeat(1 + (i % 30))]))

/** The files of every partition rebuilt from `base` and `next`'s patches equal `next`'s, byte for byte; the patches' operation count. */
async function rebuildsExactly(base: string, next: string): Promise<number> {
  const m = await readManifest(next)
  const out = path('rebuilt')
  mkdirSync(out)
  let ops = 0
  for (const e of m.partitionFiles) {
    expect(e.patch).toBeDefined()
    ops += e.patch!.ops
    await applyPatch({ baseDir: base, patchFile: join(next, e.patch!.name), outDir: out, manifest: m, partition: e.partition })
    for (const f of e.files) expect(readFileSync(join(out, f.name)).equals(readFileSync(join(next, f.name)))).toBe(true)
  }
  return ops
}

/** The largest data file of a build output: one with several records. */
function largestDataFile(dir: string): string {
  const names = readdirSync(dir).filter((n) => n.endsWith('.data'))
  return join(dir, names.sort((a, b) => statSync(join(dir, b)).size - statSync(join(dir, a)).size)[0]!)
}

describe('build --base: the merge by index prefixes', () => {
  test('keys that share an index prefix (md5-collide-2) are ordered by their full hash: base + patch = the full build', async () => {
    const keyHash = 'md5-collide-2'
    const v1 = initial(400)
    const v2 = new Map(v1)
    for (let i = 0; i < 400; i += 9) v2.delete(`key-${i}`)
    for (let i = 1; i < 400; i += 9) v2.set(`key-${i}`, `changed ${i}`)
    // Same length as before, other bytes.
    for (let i = 2; i < 400; i += 9) v2.set(`key-${i}`, (v1.get(`key-${i}`) as string).replace('value', 'VALUE'))
    for (let i = 0; i < 30; i++) v2.set(`new-${i}`, `added ${i}`)
    const d1 = await build(v1, 1, { keyHash })
    const d2 = await build(v2, 2, { keyHash, base: d1 })
    // 45 removed, 45 changed, 45 changed in place, 30 added.
    expect(await rebuildsExactly(d1, d2)).toBe(45 + 45 + 45 + 30)
    // The same records again: every patch is empty.
    const d3 = await build(v2, 3, { keyHash, base: d2 })
    expect(await rebuildsExactly(d2, d3)).toBe(0)
  })

  test('a base record the patch deletes is checked: a flipped byte in it fails the build, which leaves no output', async () => {
    const d1 = await build(initial(300), 1)
    const data = largestDataFile(d1)
    const bytes = readFileSync(data)
    // The first record's first key byte.
    bytes[HEADER_SIZE + RECORD_HEADER_SIZE] = (bytes[HEADER_SIZE + RECORD_HEADER_SIZE] as number) ^ 0x01
    writeFileSync(data, bytes)
    const output = path('v2')
    // Nothing left: every base record is deleted.
    await expect(build(new Map(), 2, { base: d1, output })).rejects.toMatchObject({ code: 'RO_CORRUPT' })
    expect(existsSync(output)).toBe(false)
    expect(readdirSync(tmp.dir).filter((n) => n.includes('.rostore-tmp-'))).toEqual([])
  })

  test('a base index whose entries are swapped is refused (RO_CORRUPT)', async () => {
    const v1 = initial(300)
    const d1 = await build(v1, 1)
    const index = largestDataFile(d1).replace(/\.data$/, '.index')
    const bytes = readFileSync(index)
    const first = Buffer.from(bytes.subarray(HEADER_SIZE, HEADER_SIZE + INDEX_ENTRY_SIZE))
    bytes.copy(bytes, HEADER_SIZE, HEADER_SIZE + INDEX_ENTRY_SIZE, HEADER_SIZE + 2 * INDEX_ENTRY_SIZE)
    first.copy(bytes, HEADER_SIZE + INDEX_ENTRY_SIZE)
    writeFileSync(index, bytes)
    const output = path('v2')
    await expect(build(v1, 2, { base: d1, output })).rejects.toMatchObject({ code: 'RO_CORRUPT' })
    expect(existsSync(output)).toBe(false)
  })

  test('cancelled while the patches wait for the reduce, or once it is done: RO_ABORTED, no output, no temp directory', async () => {
    const v1 = initial(500)
    const d1 = await build(v1, 1)
    const v2 = new Map(v1)
    for (let i = 0; i < 500; i += 4) v2.set(`key-${i}`, `changed ${i}`)
    for (const at of ['start', 'end'] as const) {
      const ac = new AbortController()
      const output = path('v2')
      const onProgress = (p: { phase: string; bucketsDone: number; bucketsTotal: number }): void => {
        if (p.phase === 'reduce' && p.bucketsDone === (at === 'start' ? 0 : p.bucketsTotal)) ac.abort()
      }
      await expect(build(v2, 2, { base: d1, output, signal: ac.signal, onProgress })).rejects.toMatchObject({ code: 'RO_ABORTED' })
      expect(ac.signal.aborted).toBe(true)
      expect(existsSync(output)).toBe(false)
      expect(readdirSync(tmp.dir).filter((n) => n.includes('.rostore-tmp-'))).toEqual([])
    }
    // Not cancelled: the same build goes through.
    expect(await rebuildsExactly(d1, await build(v2, 2, { base: d1 }))).toBe(125)
  })

  test('a base of another chunk count is refused before anything is built', async () => {
    const d1 = await build(initial(50), 1, { chunks: 3 })
    const output = path('v2')
    let progressed = 0
    await expect(build(initial(50), 2, { base: d1, chunks: 2, output, onProgress: () => void progressed++ })).rejects.toMatchObject({
      code: 'RO_BAD_OPTION',
      message: expect.stringMatching(/3 chunks per partition/),
    })
    expect(progressed).toBe(0)
    expect(existsSync(output)).toBe(false)
  })

  test('a --patch-only build cannot be a base: refused before anything is built', async () => {
    const v1 = initial(300)
    const d1 = await build(v1, 1)
    const v2 = new Map(v1)
    v2.set('key-1', 'changed')
    const only = await build(v2, 2, { base: d1, patchOnly: true })
    const output = path('v3')
    await expect(build(v2, 3, { base: only, output })).rejects.toMatchObject({
      code: 'RO_BAD_OPTION',
      message: expect.stringMatching(/--base: p\d+-c\d+\.index is missing/),
    })
    expect(existsSync(output)).toBe(false)
  })
})
