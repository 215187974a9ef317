import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import type { BuildOptions } from '../../../builder/build-options'
import { parseCluster } from '../../../cluster/cluster'
import { buildSide, diffSides } from '../../../client/dump/diff'
import { dumpBuild } from '../../../client/dump/dump'
import { columnsFor, createOutput } from '../../../client/dump/dump-output'
import { fetchPartitions } from '../../../fetcher/partition-fetch'
import { nativeFunctions } from '../../../common/native'
import { DICTIONARY_FILE, versionCodec } from '../../../formats/store/chunk/dictionary-file'
import { dumpRecords } from '../../../formats/store/scan/dump'
import { readManifest } from '../../../formats/store/layout/manifest-io'
import { openStore } from '../../../formats/store/read/store-reader'
import { verifyStore } from '../../../formats/store/scan/verify'
import { stageNodeDir } from '../../../swapper/disk/install'
import { expectSameTree } from '../../../testkit/stores/file-tree'
import { writeInput } from '../../../testkit/stores/input-files'
import { realisticRecords, valueShapes } from '../../../testkit/stores/realistic-values'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp('rostore-zstd-')
afterAll(tmp.cleanup)
const maybe = nativeFunctions() ? describe : describe.skip

const cluster = parseCluster({
  name: 'test',
  nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', port: 7200 + id, partitions: [id, id + 3, id + 6] })),
})

/** Realistic values, then the shapes every codec must carry: empty, 1 byte, incompressible, 64 KiB, 4 MiB. */
function records(): [string, string][] {
  return [...realisticRecords(7, 3000, 'user-'), ...valueShapes()]
}

maybe('--compression zstd through the build, readers, verify and install', () => {
  const recs = records()
  const input = join(tmp.dir, 'in.tsv')
  const opts = (output: string, o: Partial<BuildOptions> = {}): BuildOptions => ({
    inputs: [input],
    format: 'tsv',
    cluster,
    store: 'st',
    output,
    version: 5,
    replication: 2,
    chunks: 2,
    workers: 2,
    memoryMb: 64,
    compression: 'zstd',
    ...o,
  })
  let out: string
  beforeAll(async () => {
    await writeInput(input, 'tsv', recs)
    out = join(tmp.dir, 'out')
    await buildStore(opts(out))
  })

  test('the version names its dictionary, and every value reads back', async () => {
    const m = await readManifest(out)
    expect(m.compression).toBe('zstd')
    expect(m.dictionary?.name).toBe(DICTIONARY_FILE)
    expect(readFileSync(join(out, DICTIONARY_FILE)).length).toBe(m.dictionary?.size)
    expect(m.build['zstdLevel']).toBe(3)
    const r = await openStore(out)
    try {
      for (const [k, v] of recs) expect(r.get(k)?.toString()).toBe(v)
      expect(r.get('absent')).toBeUndefined()
    } finally {
      r.close()
    }
    await verifyStore(out)
  })

  test('the same input builds the same dictionary and the same files', async () => {
    const again = join(tmp.dir, 'again')
    await buildStore(opts(again))
    expectSameTree(out, again)
  })

  test('the values take far less room than without compression', async () => {
    const plain = join(tmp.dir, 'plain')
    await buildStore(opts(plain, { compression: 'none' }))
    const size = async (dir: string): Promise<number> =>
      (await readManifest(dir)).partitionFiles.flatMap((p) => p.files).reduce((s, f) => s + f.size, 0)
    expect(await size(out)).toBeLessThan(0.8 * (await size(plain)))
  })

  test('diff compares decompressed values: a zstd build and an uncompressed one of the same input are equal', async () => {
    const plain = join(tmp.dir, 'plain-diff')
    await buildStore(opts(plain, { compression: 'none' }))
    const counts = await diffSides(buildSide(out), buildSide(plain))
    expect(counts).toEqual({ added: 0, removed: 0, changed: 0, unchanged: recs.length })
  })

  test.each(['pread', 'mmap'] as const)('a node directory installed from the build carries the dictionary (%s)', async (access) => {
    const dest = join(tmp.dir, `node-1-${access}`)
    const meta = await stageNodeDir(out, dest, {}, 1)
    expect(meta.dictionary).toBeDefined()
    expect(existsSync(join(dest, DICTIONARY_FILE))).toBe(true)
    await verifyStore(dest)
    const r = await openStore(dest, { access })
    try {
      let found = 0
      for (const [k, v] of recs) {
        const got = r.get(k)
        if (got !== undefined) {
          expect(got.toString()).toBe(v)
          found++
        }
      }
      expect(found).toBeGreaterThan(recs.length / 2)
    } finally {
      r.close()
    }
    const want = new Map(recs)
    const dumped = [...dumpRecords(dest, meta, Infinity, await versionCodec(dest, meta))]
    expect(dumped.length).toBe(meta.records)
    for (const d of dumped) expect(d.value).toBe(want.get(d.key))
  })

  test("a fetch of a node's partitions from the build output brings the dictionary", async () => {
    const destDir = join(tmp.dir, 'fetched-1')
    const r = await fetchPartitions({ fetchFrom: 'source', source: out, nodeId: 1, destDir, expect: { store: 'st', version: 5 } })
    expect(r.meta.dictionary?.name).toBe(DICTIONARY_FILE)
    expect(readFileSync(join(destDir, DICTIONARY_FILE)).equals(readFileSync(join(out, DICTIONARY_FILE)))).toBe(true)
    await verifyStore(destDir)
    const reader = await openStore(destDir)
    try {
      const hits = recs.filter(([k, v]) => reader.get(k)?.toString() === v).length
      expect(hits).toBe(r.meta.records)
    } finally {
      reader.close()
    }
  })

  test('a damaged dictionary is refused, never used', async () => {
    const dest = join(tmp.dir, 'node-damaged')
    await stageNodeDir(out, dest, {}, 0)
    const file = join(dest, DICTIONARY_FILE)
    const bytes = readFileSync(file)
    bytes[bytes.length - 10] = (bytes[bytes.length - 10] as number) ^ 1
    writeFileSync(file, bytes)
    await expect(openStore(dest)).rejects.toMatchObject({ code: 'RO_CHECKSUM_MISMATCH' })
    await expect(verifyStore(dest)).rejects.toMatchObject({ code: 'RO_CHECKSUM_MISMATCH' })
    // Replaced by a larger file: refused by its size, before it is read.
    writeFileSync(file, Buffer.concat([bytes, Buffer.alloc(1 << 20)]))
    await expect(openStore(dest)).rejects.toMatchObject({ code: 'RO_CHECKSUM_MISMATCH' })
  })

  test('--no-dictionary writes plain zstd frames; --layout nodes puts the dictionary in each node directory', async () => {
    const plain = join(tmp.dir, 'nodict')
    await buildStore(opts(plain, { dictionary: false, zstdLevel: 1 }))
    const m = await readManifest(plain)
    expect(m.dictionary).toBeUndefined()
    expect(existsSync(join(plain, DICTIONARY_FILE))).toBe(false)
    const nodes = join(tmp.dir, 'nodes')
    await buildStore(opts(nodes, { layout: 'nodes' }))
    for (const dir of [plain, join(nodes, 'node-2')]) {
      const r = await openStore(dir)
      try {
        for (const [k, v] of recs.slice(0, 200)) {
          const got = r.get(k)
          if (got !== undefined || dir === plain) expect(got?.toString()).toBe(v)
        }
      } finally {
        r.close()
      }
      await verifyStore(dir)
    }
    expect(existsSync(join(nodes, 'node-2', DICTIONARY_FILE))).toBe(true)
  })

  test('zstd options without --compression zstd, and levels out of range, are refused', async () => {
    await expect(buildStore(opts(join(tmp.dir, 'x1'), { compression: 'gzip', zstdLevel: 3 }))).rejects.toMatchObject({
      code: 'RO_BAD_OPTION',
    })
    await expect(buildStore(opts(join(tmp.dir, 'x2'), { zstdLevel: 23 }))).rejects.toMatchObject({ code: 'RO_BAD_OPTION' })
  })

  test("a plain dump rebuilt with --zstd-dictionary (the version's own) gives the same files", async () => {
    // The dump is in file order, not the input's: a dictionary trained from it would differ.
    const dumped = join(tmp.dir, 'dumped.arrow')
    const sink = await createOutput(dumped, 'arrow', columnsFor('string', 'string', false))
    await dumpBuild({ dir: out }, () => Promise.resolve(sink))
    await sink.commit()
    const rebuilt = join(tmp.dir, 'rebuilt')
    await buildStore(opts(rebuilt, { inputs: [dumped], format: 'arrow', zstdDictionary: join(out, DICTIONARY_FILE) }))
    const [a, b] = [await readManifest(out), await readManifest(rebuilt)]
    expect(b.dictionary).toEqual(a.dictionary)
    expect(b.build['zstdDictionary']).toBe('given')
    expect(b.partitionFiles).toEqual(a.partitionFiles)
    const retrained = join(tmp.dir, 'retrained')
    await buildStore(opts(retrained, { inputs: [dumped], format: 'arrow' }))
    expect((await readManifest(retrained)).dictionary?.checksum).not.toBe(a.dictionary?.checksum)
  })

  test('--zstd-dictionary: a file that is not a zstd dictionary, or with --no-dictionary or another codec, is refused', async () => {
    const junk = join(tmp.dir, 'junk.dict')
    writeFileSync(junk, randomBytes(4096))
    await expect(buildStore(opts(join(tmp.dir, 'x3'), { zstdDictionary: junk }))).rejects.toMatchObject({
      code: 'RO_BAD_OPTION',
      message: expect.stringContaining(junk),
    })
    await expect(buildStore(opts(join(tmp.dir, 'x4'), { zstdDictionary: join(tmp.dir, 'missing.dict') }))).rejects.toMatchObject({
      code: 'RO_BAD_OPTION',
    })
    const dict = join(out, DICTIONARY_FILE)
    await expect(buildStore(opts(join(tmp.dir, 'x5'), { zstdDictionary: dict, dictionary: false }))).rejects.toMatchObject({
      code: 'RO_BAD_OPTION',
    })
    await expect(buildStore(opts(join(tmp.dir, 'x6'), { zstdDictionary: dict, compression: 'snappy' }))).rejects.toMatchObject({
      code: 'RO_BAD_OPTION',
    })
    for (const x of ['x3', 'x4', 'x5', 'x6']) expect(existsSync(join(tmp.dir, x))).toBe(false)
  })
})

/** Reads `keys` of the version in `dir` in a child process without the addon: its stdout (JSON) and stderr. */
function readWithoutAddon(dir: string, keys: readonly string[]): { out: string; err: string; status: number | null } {
  const reader = join(__dirname, '..', '..', '..', 'formats', 'store', 'read', 'store-reader.js')
  const script = `
    const { openStore } = require(${JSON.stringify(reader)})
    openStore(${JSON.stringify(dir)}).then((r) => {
      const got = ${JSON.stringify(keys)}.map((k) => r.get(k)?.toString() ?? null)
      r.close()
      process.stdout.write(JSON.stringify(got))
    }, (err) => process.stdout.write(JSON.stringify({ code: err.code })))`
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, ROSTORE_NATIVE: '0' } })
  return { out: r.stdout, err: r.stderr, status: r.status }
}

maybe('without the addon (ROSTORE_NATIVE=0)', () => {
  const recs = records().filter(([k]) => k !== 'm4')
  const input = join(tmp.dir, 'fallback.tsv')
  const build = async (output: string, dictionary: boolean): Promise<string> => {
    await buildStore({
      inputs: [input],
      format: 'tsv',
      cluster,
      store: 'st',
      output,
      version: 6,
      chunks: 1,
      workers: 1,
      memoryMb: 32,
      compression: 'zstd',
      dictionary,
    })
    return output
  }
  beforeAll(() => writeInput(input, 'tsv', recs))

  test('plain zstd values are read by the JavaScript decoder, said once in the log', async () => {
    const dir = await build(join(tmp.dir, 'fallback-plain'), false)
    const keys = ['empty', 'one', 'random', 'k64', 'user-5', 'absent']
    const r = readWithoutAddon(dir, keys)
    expect(r.status).toBe(0)
    const want = new Map(recs)
    expect(JSON.parse(r.out)).toEqual(keys.map((k) => want.get(k) ?? null))
    expect(r.err.match(/"event":"zstd_fallback"/g)?.length).toBe(1)
  })

  test('a version with a dictionary is read by libzstd compiled to JavaScript, said once in the log', async () => {
    const dir = await build(join(tmp.dir, 'fallback-dict'), true)
    const keys = ['empty', 'one', 'random', 'k64', 'user-5', 'absent']
    const r = readWithoutAddon(dir, keys)
    expect(r.status).toBe(0)
    const want = new Map(recs)
    expect(JSON.parse(r.out)).toEqual(keys.map((k) => want.get(k) ?? null))
    expect(r.err.match(/"event":"zstd_fallback"/g)?.length).toBe(1)
    expect(r.err).toContain('"decoder":"zstd-codec"')
  })
})
