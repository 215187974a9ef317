import { spawnSync } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { isStoreError } from '../../common/errors'
import { cliPath } from '../../common/paths'
import { fetchVersion } from '../../fetcher/fetch-job'
import { checksumFile } from '../../formats/store/chunk/checksum'
import type { Compression } from '../../formats/store/layout/metadata'
import { openStore } from '../../formats/store/read/store-reader'
import { verifyStore } from '../../formats/store/scan/verify'
import { makeNodeDir, writableCompressions } from '../../testkit/stores/make-store'
import { json, startSingleNode, type NodeProcess } from '../../testkit/cluster/node-process'
import {
  faultSeed,
  leftoversOf,
  makeVersionDir,
  pick,
  randomInt,
  readEveryKey,
  reportFigures,
  seededRandom,
  versionDirsOf,
  versionValue,
} from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * Promise 2 of docs/RELIABILITY.md: corrupt store files are refused, never served.
 *
 * Part 1 fuzzes one small store per compression with seeded random mutations (byte flips,
 * bursts, truncations, extensions, zeroed ranges, chunk files swapped or taken from
 * another version, files deleted, metadata fields edited). For every mutation:
 * - verifyStore refuses it with a StoreError (the only exception: a metadata byte flip
 *   that changes no field the files are bound to, such as whitespace or clusterName,
 *   which is no corruption of the data);
 * - openStore refuses it with a StoreError, or every present key reads back its exact
 *   value or a StoreError, and absent keys read as absent or a StoreError: never a wrong
 *   value, never "absent" for a present key, never another kind of exception.
 * Part 2 checks the server side: install, swap and fetch refuse corrupt versions and the
 * live version stays served.
 */

jest.setTimeout(120_000)
const tmp = makeTmp('rostore-corrupt-')
const SEED = faultSeed(20240611)
const MUTATIONS_PER_STORE = 110
const COMPRESSIONS = (['none', 'snappy', 'gzip', 'zstd'] as const).filter((c: Compression) => writableCompressions().includes(c))
const KEYS = 240

const keyOf = (i: number): Buffer => (i % 60 === 59 ? Buffer.from([0, 0xff, i & 0xff, 0x0a]) : Buffer.from(`key-${i}`))
function valueOf(i: number): Buffer {
  if (i % 17 === 0) return Buffer.alloc(0)
  if (i % 41 === 0) return Buffer.alloc(6000 + i, `big-${i}-`) // beyond the reader's 4 KiB read-ahead
  return Buffer.from(`value-${i}-${'x'.repeat(i % 50)}`)
}
const RECORDS: [Buffer, Buffer][] = Array.from({ length: KEYS }, (_, i) => [keyOf(i), valueOf(i)])
const ABSENT = Array.from({ length: 40 }, (_, i) => Buffer.from(`absent-${i}`))

/** Metadata fields no file is bound to: a change there is not detectable, and not corruption of the data. */
const UNBOUND_FIELDS = ['clusterName', 'keySerializer', 'valueSerializer', 'build', 'formatMinor']

interface Mutation {
  readonly kind: string
  readonly detail: string
  /** A byte flip inside metadata.json (may leave the meaning unchanged). */
  readonly metadataBytes?: boolean
}

const figures = {
  seed: SEED,
  mutations: 0,
  byKind: {} as Record<string, number>,
  verifyRefused: 0,
  verifyAcceptedHarmless: 0,
  openRefused: 0,
  opened: 0,
  readsCorrect: 0,
  readsRefused: 0,
  wrongValues: 0,
  silentAbsent: 0,
  otherExceptions: 0,
  e2e: { installsRefused: 0, swapsRefused: 0, fetchesRefused: 0, cliRefused: 0 },
}

function chunkFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => /^\d+\.(index|data)$/.test(n))
    .sort()
}

function flipByte(path: string, at: number, xor: number): void {
  const b = readFileSync(path)
  b[at] = (b[at] as number) ^ xor
  writeFileSync(path, b)
}

function editMetadata(dir: string, edit: (m: Record<string, unknown>) => void): void {
  const path = join(dir, 'metadata.json')
  const m = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>
  edit(m)
  writeFileSync(path, JSON.stringify(m, null, 2))
}

type Files = { name: string; size: number; checksum: string }[]

/** Field edits a hand, a bad tool or a bad merge could make; each breaks a binding the readers rely on. */
const METADATA_EDITS: readonly [string, (m: Record<string, unknown>, rand: () => number) => void][] = [
  ['version+1', (m) => (m['version'] = (m['version'] as number) + 1)],
  ['store', (m) => (m['store'] = 'other-store')],
  ['nodeId', (m) => (m['nodeId'] = 1)],
  ['chunks', (m) => (m['chunks'] = (m['chunks'] as number) + 1)],
  ['chunkRecords swapped', (m) => (m['chunkRecords'] = [...(m['chunkRecords'] as number[])].reverse())],
  [
    'chunkRecords moved',
    (m) => {
      const c = [...(m['chunkRecords'] as number[])]
      c[0] = (c[0] as number) + 1
      c[1] = (c[1] as number) - 1
      m['chunkRecords'] = c
    },
  ],
  ['records', (m) => (m['records'] = (m['records'] as number) + 1)],
  ['compression', (m) => (m['compression'] = m['compression'] === 'none' ? 'gzip' : 'none')],
  ['keyHash unknown', (m) => (m['keyHash'] = 'sha1')],
  ['keyHash other', (m) => (m['keyHash'] = 'md5-collide-3')],
  ['checksumAlgorithm', (m) => (m['checksumAlgorithm'] = 'md5')],
  ['formatMajor', (m) => (m['formatMajor'] = 2)],
  ['replication beyond the layout', (m) => (m['replication'] = 2)],
  ['layout partition gap', (m) => (m['layout'] = [{ id: 0, partitions: [1] }])],
  [
    'layout other node',
    (m) =>
      (m['layout'] = [
        { id: 0, partitions: [0] },
        { id: 1, partitions: [1] },
      ]),
  ],
  [
    'file size',
    (m, rand) => {
      const files = m['files'] as Files
      const f = files[Math.floor(rand() * files.length)]!
      f.size += 1
    },
  ],
  [
    'file checksum',
    (m, rand) => {
      const files = m['files'] as Files
      const f = files[Math.floor(rand() * files.length)]!
      f.checksum = f.checksum.replace(/^./, (c) => (c === '0' ? '1' : '0'))
    },
  ],
  [
    'file names swapped',
    (m) => {
      const files = m['files'] as Files
      const a = files.find((f) => f.name === '0.data')!
      const b = files.find((f) => f.name === '1.data')!
      a.name = '1.data'
      b.name = '0.data'
    },
  ],
  ['file dropped', (m) => (m['files'] = (m['files'] as Files).slice(1))],
  ['file renamed outside', (m) => ((m['files'] as Files)[0]!.name = '../0.index')],
]

/** Applies one random mutation to the store in `dir`; `other` is the same store at another version. */
function mutate(dir: string, other: string, rand: () => number): Mutation {
  const files = chunkFiles(dir)
  const r = rand()
  const anyChunkFile = (): string => pick(rand, files)
  const dataOrIndex = (): string =>
    rand() < 0.55
      ? pick(
          rand,
          files.filter((f) => f.endsWith('.data')),
        )
      : pick(
          rand,
          files.filter((f) => f.endsWith('.index')),
        )
  if (r < 0.36) {
    // One flipped byte; headers (64 bytes) get their share.
    const meta = rand() < 0.12
    const name = meta ? 'metadata.json' : dataOrIndex()
    const path = join(dir, name)
    const size = statSync(path).size
    const at = !meta && rand() < 0.35 ? randomInt(rand, 0, Math.min(63, size - 1)) : randomInt(rand, 0, size - 1)
    const xor = randomInt(rand, 1, 255)
    flipByte(path, at, xor)
    return { kind: meta ? 'flip metadata byte' : 'flip byte', detail: `${name}@${at}^${xor}`, metadataBytes: meta }
  }
  if (r < 0.46) {
    const name = dataOrIndex()
    const path = join(dir, name)
    const size = statSync(path).size
    const n = randomInt(rand, 2, 8)
    const at: number[] = []
    for (let i = 0; i < n; i++) {
      const p = randomInt(rand, 0, size - 1)
      at.push(p)
      flipByte(path, p, randomInt(rand, 1, 255))
    }
    return { kind: 'flip burst', detail: `${name}@${at.join(',')}` }
  }
  if (r < 0.56) {
    const name = rand() < 0.1 ? 'metadata.json' : anyChunkFile()
    const path = join(dir, name)
    const len = randomInt(rand, 0, statSync(path).size - 1)
    truncateSync(path, len)
    return { kind: 'truncate', detail: `${name} to ${len}` }
  }
  if (r < 0.61) {
    const name = anyChunkFile()
    const extra = Buffer.from(Array.from({ length: randomInt(rand, 1, 64) }, () => randomInt(rand, 0, 255)))
    writeFileSync(join(dir, name), Buffer.concat([readFileSync(join(dir, name)), extra]))
    return { kind: 'extend', detail: `${name} +${extra.length}` }
  }
  if (r < 0.66) {
    const name = dataOrIndex()
    const path = join(dir, name)
    const b = readFileSync(path)
    const at = randomInt(rand, 0, b.length - 1)
    const n = randomInt(rand, 16, 256)
    b.fill(0, at, Math.min(b.length, at + n))
    writeFileSync(path, b)
    return { kind: 'zero range', detail: `${name}@${at}+${n}` }
  }
  if (r < 0.72) {
    const kind = rand() < 0.5 ? 'data' : 'index'
    const [a, c] = rand() < 0.5 ? [0, 1] : [1, 2]
    renameSync(join(dir, `${a}.${kind}`), join(dir, 'swap.tmp'))
    renameSync(join(dir, `${c}.${kind}`), join(dir, `${a}.${kind}`))
    renameSync(join(dir, 'swap.tmp'), join(dir, `${c}.${kind}`))
    return { kind: 'swap chunk files', detail: `${a}.${kind} <-> ${c}.${kind}` }
  }
  if (r < 0.77) {
    const name = anyChunkFile()
    cpSync(join(other, name), join(dir, name))
    return { kind: 'file from another version', detail: name }
  }
  if (r < 0.8) {
    const name = rand() < 0.15 ? 'metadata.json' : anyChunkFile()
    if (rand() < 0.5) unlinkSync(join(dir, name))
    else writeFileSync(join(dir, name), '')
    return { kind: 'delete or empty a file', detail: name }
  }
  const [label, edit] = pick(rand, METADATA_EDITS)
  editMetadata(dir, (m) => edit(m, rand))
  return { kind: 'edit metadata field', detail: label }
}

/** Equal once the fields no file is bound to are left out. */
function sameMeaning(a: unknown, b: unknown): boolean {
  const strip = (m: unknown): string => {
    const o = { ...(m as Record<string, unknown>) }
    for (const f of UNBOUND_FIELDS) delete o[f]
    return JSON.stringify(o)
  }
  return strip(a) === strip(b)
}

function describeErr(e: unknown): string {
  return isStoreError(e) ? `${e.code}: ${e.message}` : `${(e as Error)?.name}: ${(e as Error)?.message ?? String(e)}`
}

afterAll(() => {
  tmp.cleanup()
  const f = figures
  reportFigures(
    'corrupt-store',
    `corrupt-store: ${f.mutations} mutations (seed ${f.seed}): verify refused ${f.verifyRefused} (+${f.verifyAcceptedHarmless} harmless metadata byte flips accepted), open refused ${f.openRefused}, opened ${f.opened} -> ${f.readsCorrect} reads correct, ${f.readsRefused} refused; wrong values ${f.wrongValues}, silent misses ${f.silentAbsent}, other exceptions ${f.otherExceptions}; end to end: ${f.e2e.installsRefused} installs, ${f.e2e.swapsRefused} swaps, ${f.e2e.fetchesRefused} fetches, ${f.e2e.cliRefused} CLI verifies refused`,
    f,
  )
})

describe('seeded mutation fuzzing of the reader and verify', () => {
  test.each(COMPRESSIONS.map((c) => [c] as const))('%s store: every mutation is refused or read correctly', async (compression) => {
    const base = join(tmp.dir, `pristine-${compression}`)
    const other = join(tmp.dir, `pristine-${compression}-v2`)
    await makeNodeDir(base, RECORDS, { store: 'fuzz', version: 1, chunks: 3, compression })
    await makeNodeDir(other, RECORDS, { store: 'fuzz', version: 2, chunks: 3, compression })
    const original = JSON.parse(readFileSync(join(base, 'metadata.json'), 'utf8')) as unknown
    const rand = seededRandom(SEED + COMPRESSIONS.indexOf(compression))
    const problems: string[] = []
    const work = join(tmp.dir, `work-${compression}`)

    for (let n = 0; n < MUTATIONS_PER_STORE; n++) {
      rmSync(work, { recursive: true, force: true })
      cpSync(base, work, { recursive: true })
      const m = mutate(work, other, rand)
      const label = `#${n} ${m.kind} (${m.detail})`
      figures.mutations++
      figures.byKind[m.kind] = (figures.byKind[m.kind] ?? 0) + 1

      // verify
      let verified = false
      try {
        await verifyStore(work)
        verified = true
      } catch (e) {
        if (isStoreError(e)) figures.verifyRefused++
        else {
          figures.otherExceptions++
          problems.push(`${label}: verify threw ${describeErr(e)}`)
        }
      }
      if (verified) {
        let harmless = false
        if (m.metadataBytes) {
          try {
            harmless = sameMeaning(JSON.parse(readFileSync(join(work, 'metadata.json'), 'utf8')), original)
          } catch {
            harmless = false
          }
        }
        if (harmless) figures.verifyAcceptedHarmless++
        else problems.push(`${label}: verify accepted it`)
      }

      // the reader
      let reader
      try {
        reader = await openStore(work)
      } catch (e) {
        if (isStoreError(e)) figures.openRefused++
        else {
          figures.otherExceptions++
          problems.push(`${label}: open threw ${describeErr(e)}`)
        }
        continue
      }
      figures.opened++
      try {
        for (const [k, v] of RECORDS) {
          let got: Buffer | undefined
          try {
            got = reader.get(k)
          } catch (e) {
            if (isStoreError(e)) figures.readsRefused++
            else {
              figures.otherExceptions++
              problems.push(`${label}: get threw ${describeErr(e)}`)
            }
            continue
          }
          if (got === undefined) {
            figures.silentAbsent++
            problems.push(`${label}: present key ${k.toString('hex')} read as absent`)
          } else if (!got.equals(v)) {
            figures.wrongValues++
            problems.push(`${label}: key ${k.toString('hex')} read a wrong value`)
          } else figures.readsCorrect++
        }
        for (const k of ABSENT) {
          try {
            if (reader.get(k) !== undefined) {
              figures.wrongValues++
              problems.push(`${label}: absent key ${k.toString()} read a value`)
            }
          } catch (e) {
            if (!isStoreError(e)) {
              figures.otherExceptions++
              problems.push(`${label}: get of an absent key threw ${describeErr(e)}`)
            }
          }
        }
      } finally {
        reader.close()
      }
    }
    expect(problems.slice(0, 15)).toEqual([])
  })
})

describe('the server refuses corrupt versions and keeps serving the live one', () => {
  const TOKEN = 'corrupt-test-token-0123456789'
  const STORE = 'users'
  const KEYS_E2E = 300
  let node: NodeProcess
  let dataDir: string
  let src: Record<number, string>

  beforeAll(async () => {
    src = {}
    for (const v of [1, 2, 3])
      src[v] = await makeVersionDir(join(tmp.dir, 'src', `v${v}`, 'node-0'), { store: STORE, version: v, keys: KEYS_E2E })
    dataDir = join(tmp.dir, 'node-data')
    node = await startSingleNode({ dir: join(tmp.dir, 'node'), dataDir, token: TOKEN, keepVersions: 5 })
    await node.install(STORE, src[1]!, { swap: true })
  })
  afterAll(async () => {
    if (node?.running) await node.kill9()
  })

  async function expectLiveUnchanged(): Promise<void> {
    expect(await readEveryKey(node, STORE, KEYS_E2E)).toBe(1)
    expect(leftoversOf(join(dataDir, STORE))).toEqual([])
  }

  /** A copy of version 2 with one corruption, for install and verify. */
  async function corruptCopy(name: string, corrupt: (dir: string) => void | Promise<void>): Promise<string> {
    const dir = join(tmp.dir, 'corrupt', name, 'node-0')
    mkdirSync(join(dir, '..'), { recursive: true })
    cpSync(src[2]!, dir, { recursive: true })
    await corrupt(dir)
    return dir
  }

  const CORRUPTIONS: readonly [string, (dir: string) => void | Promise<void>, readonly string[]][] = [
    ['a flipped value byte', (d) => flipByte(join(d, '1.data'), statSync(join(d, '1.data')).size - 3, 0x20), ['RO_CHECKSUM_MISMATCH']],
    ['a flipped index byte', (d) => flipByte(join(d, '0.index'), 64 + 16 * 5 + 2, 0x01), ['RO_CHECKSUM_MISMATCH']],
    ['a truncated data file', (d) => truncateSync(join(d, '2.data'), 100), ['RO_CORRUPT', 'RO_CHECKSUM_MISMATCH']],
    [
      'two data files swapped',
      (d) => {
        renameSync(join(d, '0.data'), join(d, 'x'))
        renameSync(join(d, '1.data'), join(d, '0.data'))
        renameSync(join(d, 'x'), join(d, '1.data'))
      },
      ['RO_CORRUPT', 'RO_CHECKSUM_MISMATCH'],
    ],
    [
      "a metadata version that is not the files'",
      (d) => editMetadata(d, (m) => (m['version'] = 3)),
      ['RO_CORRUPT', 'RO_CHECKSUM_MISMATCH', 'RO_CONFLICT'],
    ],
    [
      'a record changed with matching file checksums',
      async (d) => {
        const f = join(d, '1.data')
        flipByte(f, statSync(f).size - 2, 0x08)
        await regenerateChecksums(d)
      },
      ['RO_CORRUPT'],
    ],
  ]

  test.each(CORRUPTIONS.map(([name, fn, codes]) => [name, fn, codes] as const))(
    'install of %s: the job fails, nothing is kept, v1 stays live',
    async (name, fn, codes) => {
      const dir = await corruptCopy(`install-${name.replace(/\W+/g, '-')}`, fn)
      const r = await node.admin('POST', `/stores/${STORE}/install`, { path: dir, swap: true })
      expect(r.status).toBe(202)
      const job = await node.waitJob(String(json(r)['id']))
      expect(job['state']).toBe('failed')
      expect(codes).toContain((job['error'] as { code: string }).code)
      figures.e2e.installsRefused++
      expect(versionDirsOf(join(dataDir, STORE))).toEqual([1])
      await expectLiveUnchanged()
    },
  )

  test('a version corrupted on disk after install: swap refuses it (index) or serves errors, never wrong values (data)', async () => {
    await node.install(STORE, src[2]!)
    await node.install(STORE, src[3]!)
    // Index damage is caught when the swap opens the version (index checksums).
    flipByte(join(dataDir, STORE, 'version-2', '1.index'), 64 + 16 * 3 + 1, 0x40)
    const r = await node.admin('POST', `/stores/${STORE}/swap`, { version: 2 })
    expect(r.status).toBe(422)
    expect(['RO_CHECKSUM_MISMATCH', 'RO_CORRUPT']).toContain(json<{ error: { code: string } }>(r).error.code)
    figures.e2e.swapsRefused++
    const rb = await node.admin('POST', `/stores/${STORE}/swap`, { version: 2 })
    expect(rb.status).toBe(422)
    figures.e2e.swapsRefused++
    await expectLiveUnchanged()
    // Data damage is caught per record (CRC) when read: the swap, which does not read
    // the data files, goes through; the damaged key answers an error, every other key its value.
    const f = join(dataDir, STORE, 'version-3', '0.data')
    flipByte(f, statSync(f).size - 4, 0x10)
    expect((await node.admin('POST', `/stores/${STORE}/swap`, { version: 3 })).status).toBe(200)
    let errors = 0
    for (let i = 0; i < KEYS_E2E; i++) {
      const g = await node.request(`/stores/${STORE}/keys/key-${i}`)
      if (g.status === 200) expect(g.body.toString()).toBe(versionValue(3, i))
      else {
        expect(g.status).toBe(422)
        expect(json<{ error: { code: string } }>(g).error.code).toBe('RO_CORRUPT')
        errors++
      }
    }
    expect(errors).toBe(1)
    // A multi-get touching the damaged key is an error too, never a body with a wrong value.
    await expect(readEveryKey(node, STORE, KEYS_E2E)).rejects.toThrow()
    expect((await node.admin('POST', `/stores/${STORE}/swap`, { version: 1 })).status).toBe(200)
    await expectLiveUnchanged()
  })

  test('the fetcher refuses a file that does not match its manifest, leaving nothing', async () => {
    const root = join(tmp.dir, 'fetch-src')
    const dir = await makeVersionDir(join(root, 'node-0'), { store: STORE, version: 5, keys: KEYS_E2E })
    flipByte(join(dir, '2.data'), 200, 0x01)
    const dest = join(tmp.dir, 'fetch-dest')
    await expect(fetchVersion({ source: root, nodeId: 0, destDir: dest, retries: 1, retryBaseDelayMs: 5 })).rejects.toMatchObject({
      code: 'RO_CHECKSUM_MISMATCH',
    })
    expect(existsSync(dest)).toBe(false)
    figures.e2e.fetchesRefused++
    // The same through a node's fetch job.
    const r = await node.admin('POST', `/stores/${STORE}/fetch`, { source: root, version: 5 })
    const versionsBefore = versionDirsOf(join(dataDir, STORE))
    const job = await node.waitJob(String(json(r)['id']), 60_000)
    expect(job).toMatchObject({ state: 'failed', error: { code: 'RO_CHECKSUM_MISMATCH' } })
    figures.e2e.fetchesRefused++
    expect(versionDirsOf(join(dataDir, STORE))).toEqual(versionsBefore)
    await expectLiveUnchanged()
  })

  test("a file corrupted together with its manifest checksum: the fetch completes, the node's verify refuses it", async () => {
    const root = join(tmp.dir, 'fetch-src-regen')
    const dir = join(root, 'node-0')
    mkdirSync(root, { recursive: true })
    const v4 = await makeVersionDir(join(tmp.dir, 'src', 'v4', 'node-0'), { store: STORE, version: 4, keys: KEYS_E2E })
    cpSync(v4, dir, { recursive: true })
    const f = join(dir, '0.data')
    flipByte(f, statSync(f).size - 1, 0x02)
    await regenerateChecksums(dir)
    // The fetcher alone is satisfied: every file matches the manifest.
    const dest = join(tmp.dir, 'fetch-dest-regen')
    await fetchVersion({ source: root, nodeId: 0, destDir: dest })
    await expect(verifyStore(dest)).rejects.toMatchObject({ code: 'RO_CORRUPT' })
    // The node verifies what it fetched before it becomes a version.
    const r = await node.admin('POST', `/stores/${STORE}/fetch`, { source: root, swap: true })
    const job = await node.waitJob(String(json(r)['id']), 60_000)
    expect(job).toMatchObject({ state: 'failed', error: { code: 'RO_CORRUPT' } })
    figures.e2e.fetchesRefused++
    expect(versionDirsOf(join(dataDir, STORE))).not.toContain(4)
    await expectLiveUnchanged()
  })

  test('rostore verify exits 1 naming the code for corrupt directories', async () => {
    for (const [name, fn, codes] of CORRUPTIONS) {
      const dir = await corruptCopy(`cli-${name.replace(/\W+/g, '-')}`, fn)
      const r = spawnSync(process.execPath, [cliPath(), 'verify', dir], { encoding: 'utf8', timeout: 60_000 })
      expect(r.status).toBe(1)
      const code = /\[(RO_[A-Z_]+)\]\s*$/.exec(r.stderr.trim())?.[1]
      expect([...codes, 'RO_CORRUPT', 'RO_CHECKSUM_MISMATCH']).toContain(code)
      figures.e2e.cliRefused++
    }
  })
})

/** Rewrites metadata.json so every file's size and checksum match what is on disk now. */
async function regenerateChecksums(dir: string): Promise<void> {
  const path = join(dir, 'metadata.json')
  const m = JSON.parse(readFileSync(path, 'utf8')) as { files: Files }
  for (const f of m.files) {
    f.size = statSync(join(dir, f.name)).size
    f.checksum = await checksumFile(join(dir, f.name))
  }
  writeFileSync(path, JSON.stringify(m, null, 2))
}
