import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StoreError } from '../../../../common/errors'
import { parseManifest, readManifest, validateManifest, writeManifest } from '../../../../formats/store/layout/manifest-io'
import { nodeView, type VersionManifest } from '../../../../formats/store/layout/partition-files'

/** Three partitions on two nodes, two chunks per partition. */
function manifest(): VersionManifest {
  const partitionFiles = [0, 1, 2].map((p) => ({
    partition: p,
    records: 3 + p,
    chunkRecords: [1, 2 + p],
    files: [0, 1].flatMap((c) => [
      { name: `p${p}-c${c}.index`, size: 64 + 16 * c, checksum: '0123456789abcdef' },
      { name: `p${p}-c${c}.data`, size: 64 + 20 * c, checksum: 'fedcba9876543210' },
    ]),
  }))
  return {
    format: 'rostore',
    formatMajor: 2,
    formatMinor: 0,
    store: 'st',
    version: 9,
    dataVersion: 9,
    clusterName: 'c',
    layout: [
      { id: 0, partitions: [0, 2] },
      { id: 1, partitions: [1] },
    ],
    replication: 1,
    partitions: 3,
    keyHash: 'md5',
    keySerializer: 'string',
    valueSerializer: 'string',
    compression: 'none',
    chunks: 2,
    records: 12,
    checksumAlgorithm: 'xxh64',
    partitionFiles,
    build: { format: 'tsv', layout: 'partitions' },
  }
}

type Mutable<T> = { -readonly [K in keyof T]: Mutable<T[K]> }
type M = Mutable<VersionManifest>

/** The manifest with one change made to its JSON copy. */
function broken(change: (m: M) => void): unknown {
  const m = JSON.parse(JSON.stringify(manifest())) as M
  change(m)
  return m
}

function errorOf(json: unknown): StoreError {
  try {
    validateManifest(json, '/x/metadata.json')
  } catch (err) {
    if (err instanceof StoreError) return err
    throw err
  }
  throw new Error('the manifest was accepted')
}

test('a whole manifest is accepted as is, and each node view lists exactly its held partitions', () => {
  const m = manifest()
  expect(validateManifest(JSON.parse(JSON.stringify(m)), 'm')).toEqual(m)
  const view = nodeView(m, 1)
  expect(view.held).toEqual([1])
  expect(view.files.map((f) => f.name)).toEqual(['p1-c0.index', 'p1-c0.data', 'p1-c1.index', 'p1-c1.data'])
  expect(view.records).toBe(4)
})

test.each([
  ['another format', (m: M) => (m.format = 'other' as 'rostore'), 'RO_BAD_FORMAT', /not a rostore manifest/],
  ['format 1', (m: M) => (m.formatMajor = 1 as 2), 'RO_BAD_FORMAT', /format major version 1/],
  ['a bad store name', (m: M) => (m.store = '../x'), 'RO_CORRUPT', /"store"/],
  ['no version', (m: M) => Reflect.deleteProperty(m, 'version'), 'RO_CORRUPT', /"version" must be an integer >= 1/],
  ['data newer than the version', (m: M) => (m.dataVersion = 10), 'RO_CORRUPT', /"dataVersion" 10 is newer/],
  ['replication above the nodes', (m: M) => (m.replication = 3), 'RO_CORRUPT', /"replication" 3 exceeds the 2 nodes/],
  ['a partition count other than the layout', (m: M) => (m.partitions = 4), 'RO_CORRUPT', /"partitions" must be 3/],
  ['a layout with a gap', (m: M) => (m.layout[1]!.partitions = [3]), 'RO_CORRUPT', /1 is missing/],
  ['a partition missing', (m: M) => m.partitionFiles.pop(), 'RO_CORRUPT', /must list the 3 partitions/],
  ['partitions out of order', (m: M) => m.partitionFiles.reverse(), 'RO_CORRUPT', /"partitionFiles"\[0\] must be partition 0/],
  ['a file of another partition', (m: M) => (m.partitionFiles[1]!.files[0]!.name = 'p2-c0.index'), 'RO_CORRUPT', /belongs to partition 2/],
  ['a chunk past the count', (m: M) => (m.partitionFiles[0]!.files[2]!.name = 'p0-c2.index'), 'RO_CORRUPT', /names chunk 2/],
  ['a format-1 file name', (m: M) => (m.partitionFiles[0]!.files[0]!.name = '0.index'), 'RO_CORRUPT', /may only name partition files/],
  ['a path', (m: M) => (m.partitionFiles[0]!.files[0]!.name = '../p0-c0.index'), 'RO_CORRUPT', /may only name partition files/],
  ['a file twice', (m: M) => (m.partitionFiles[0]!.files[2] = m.partitionFiles[0]!.files[0]!), 'RO_CORRUPT', /out of place/],
  ['a file missing', (m: M) => m.partitionFiles[2]!.files.pop(), 'RO_CORRUPT', /must list 4 chunk files, lists 3/],
  ['a bad checksum', (m: M) => (m.partitionFiles[0]!.files[1]!.checksum = 'XYZ'), 'RO_CORRUPT', /p0-c0\.data: bad checksum/],
  ['a negative size', (m: M) => (m.partitionFiles[0]!.files[1]!.size = -1), 'RO_CORRUPT', /p0-c0\.data: bad size/],
  ['chunk records not adding up', (m: M) => (m.partitionFiles[1]!.records = 5), 'RO_CORRUPT', /partition 1: "records" is not the sum/],
  [
    'records not the partitions sum',
    (m: M) => (m.records = 13),
    'RO_CORRUPT',
    /"records" 13 is not the sum of the partitions' records \(12\)/,
  ],
  ['one chunk count too few', (m: M) => m.partitionFiles[0]!.chunkRecords.pop(), 'RO_CORRUPT', /one record count per chunk \(2\)/],
  ['an unknown compression', (m: M) => (m.compression = 'lz4' as 'none'), 'RO_CORRUPT', /unknown compression/],
  ['no build record', (m: M) => Reflect.deleteProperty(m, 'build'), 'RO_CORRUPT', /"build" must be an object/],
])('%s is refused, naming the file', (_what, change, code, message) => {
  const err = errorOf(broken(change))
  expect(err.code).toBe(code)
  expect(err.message).toMatch(/^\/x\/metadata\.json: /)
  expect(err.message).toMatch(message)
})

/** The manifest of a build with --base: version 9 patched against version 7. */
function patched(): M {
  const m = JSON.parse(JSON.stringify(manifest())) as M
  m.base = { version: 7, dataVersion: 5 }
  m.partitionFiles[1]!.patch = { name: 'p1.patch', size: 90, checksum: '0123456789abcdef', ops: 3 }
  return m
}

test('a manifest naming a base and patches is accepted; its node views are unchanged', () => {
  const m = patched()
  expect(validateManifest(JSON.parse(JSON.stringify(m)), 'm')).toEqual(m)
  expect(nodeView(m, 1).files).toEqual(nodeView(manifest(), 1).files)
})

test.each([
  ['a patch without a base', (m: M) => Reflect.deleteProperty(m, 'base'), /a "patch" needs the manifest's "base"/],
  ['a base not older', (m: M) => (m.base = { version: 9, dataVersion: 9 }), /"base"."version" must be an older version than 9/],
  ['a base data version past its version', (m: M) => (m.base = { version: 7, dataVersion: 8 }), /"base"."dataVersion"/],
  ['a patch named for another partition', (m: M) => (m.partitionFiles[1]!.patch!.name = 'p2.patch'), /must be named p1.patch/],
  ['a patch with a path', (m: M) => (m.partitionFiles[1]!.patch!.name = '../p1.patch'), /must be named p1.patch/],
  ['a patch smaller than its header', (m: M) => (m.partitionFiles[1]!.patch!.size = 10), /bad patch size/],
  ['a patch without a checksum', (m: M) => Reflect.deleteProperty(m.partitionFiles[1]!.patch!, 'checksum'), /bad patch checksum/],
])('%s is refused', (_what, change, message) => {
  const m = patched()
  change(m)
  const err = errorOf(m)
  expect(err.code).toBe('RO_CORRUPT')
  expect(err.message).toMatch(message)
})

test('read and write: a written manifest reads back equal; bad JSON is RO_CORRUPT naming the file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rostore-manifest-'))
  try {
    await writeManifest(dir, manifest())
    expect(await readManifest(dir)).toEqual(manifest())
    await writeManifest(dir, manifest(), 'manifest.json')
    expect(await readManifest(dir, 'manifest.json')).toEqual(manifest())
    writeFileSync(join(dir, 'metadata.json'), '{"format":')
    await expect(readManifest(dir)).rejects.toMatchObject({
      code: 'RO_CORRUPT',
      message: expect.stringContaining(join(dir, 'metadata.json')),
    })
    await expect(readManifest(join(dir, 'absent'))).rejects.toMatchObject({ code: 'RO_IO' })
    expect(() => parseManifest('[]', 'f')).toThrow(/f: not a JSON object/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
