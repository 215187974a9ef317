import { mkdirSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { masterPartition } from '../../../cluster/routing'
import { createKeyHasher } from '../../../formats/store/layout/key-hash'
import { readManifest } from '../../../formats/store/layout/manifest-io'
import { partitionDataFileName } from '../../../formats/store/layout/partition-files'
import { applyPatch } from '../../../formats/store/patch/patch-apply'
import { PatchWriter } from '../../../formats/store/patch/patch-writer'
import { verifyStore } from '../../../formats/store/scan/verify'
import { PATCH_CLUSTER, patchBuilds } from '../../../testkit/stores/patch-builds'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp('rostore-patch-checks-')
afterAll(tmp.cleanup)
const builds = patchBuilds(tmp.dir, PATCH_CLUSTER, { chunks: 2, workers: 1, compression: 'gzip' })
const path = builds.path
const build = (recs: Map<string, string>, version: number, base?: string): Promise<string> =>
  builds.build(recs, version, base === undefined ? {} : { base })

const records = new Map(Array.from({ length: 300 }, (_, i) => [`key-${i}`, `value ${i} `.repeat(8)]))

describe('a rebuild checks the records a patch adds, as a verify walk would', () => {
  test('a put of a key of another partition, or of a value the codec cannot read, is refused and leaves no file', async () => {
    const d1 = await build(records, 1)
    const d2 = await build(new Map([...records, ['key-0', 'changed']]), 2, d1)
    const m = await readManifest(d2)
    const hasher = await createKeyHasher()
    const keyOf = (inPartition: boolean): Buffer => {
      for (let i = 0; ; i++) {
        const k = Buffer.from(`probe-${i}`)
        if ((masterPartition(hasher.hash(k), m.partitions) === 0) === inPartition) return k
      }
    }
    const cases: [Buffer, Buffer, RegExp][] = [
      [keyOf(false), gzipSync('fine'), /another partition/],
      [keyOf(true), Buffer.from('not gzip'), /does not decompress/],
    ]
    for (const [key, value, why] of cases) {
      const patchFile = path('p0.patch')
      const w = new PatchWriter(patchFile, { partition: 0, chunks: m.chunks, baseDataVersion: 1, dataVersion: 2 })
      w.put(key, value)
      w.finish()
      const out = path('out')
      mkdirSync(out)
      await expect(applyPatch({ baseDir: d1, patchFile, outDir: out, manifest: m, partition: 0 })).rejects.toMatchObject({
        code: 'RO_CORRUPT',
        message: expect.stringMatching(why) as unknown,
      })
      expect(readdirSync(out)).toEqual([])
    }
  })

  test('a verify does not read the files it is told a rebuild made, but still checks they are there at their size', async () => {
    const d1 = await build(records, 1)
    const m = await readManifest(d1)
    const data = join(d1, partitionDataFileName(0, 0))
    const rebuilt = new Set(m.partitionFiles[0]!.files.map((f) => f.name))
    expect(rebuilt.has(partitionDataFileName(0, 0))).toBe(true)
    const bytes = readFileSync(data)
    bytes.writeUInt8((bytes[bytes.length - 1] as number) ^ 0x5a, bytes.length - 1)
    writeFileSync(data, bytes)
    await expect(verifyStore(d1)).rejects.toMatchObject({ code: 'RO_CHECKSUM_MISMATCH' })
    await expect(verifyStore(d1, { rebuilt })).resolves.toMatchObject({ records: 300 })
    truncateSync(data, bytes.length - 1)
    await expect(verifyStore(d1, { rebuilt })).rejects.toMatchObject({ code: 'RO_CORRUPT' })
  })
})
