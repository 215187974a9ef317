import { spawnSync } from 'node:child_process'
import { closeSync, existsSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import type { BuildOptions } from '../../../builder/build-options'
import { parseCluster, type Cluster } from '../../../cluster/cluster'
import { masterPartition } from '../../../cluster/routing'
import { cliPath } from '../../../common/paths'
import { checksumFile } from '../../../formats/store/chunk/checksum'
import { decodeDataHeader, decodeIndexHeader, HEADER_SIZE } from '../../../formats/store/chunk/header'
import { createKeyHasher } from '../../../formats/store/layout/key-hash'
import { chunkOf } from '../../../formats/store/layout/layout'
import { readManifest } from '../../../formats/store/layout/manifest-io'
import {
  nodeView,
  partitionChunkFileId,
  partitionDataFileName,
  partitionIndexFileName,
} from '../../../formats/store/layout/partition-files'
import { walkRecords } from '../../../formats/store/scan/record-walk'
import { fileTree } from '../../../testkit/stores/file-tree'
import { writeInput } from '../../../testkit/stores/input-files'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp('rostore-partitions-')
afterAll(tmp.cleanup)
let seq = 0
const path = (name: string): string => join(tmp.dir, `${seq++}-${name}`)

/** The same 12 partitions on 3 and on 5 nodes. */
function cluster(nodes: number): Cluster {
  return parseCluster({
    name: 'test',
    nodes: Array.from({ length: nodes }, (_, id) => ({
      id,
      host: '127.0.0.1',
      port: 7100 + id,
      partitions: Array.from({ length: 12 }, (_, p) => p).filter((p) => p % nodes === id),
    })),
  })
}

/** Keys repeat within the file (the last value wins), values of all sizes. */
function records(n: number): [string, string][] {
  return Array.from({ length: n }, (_, i) => {
    const k = i % 7 === 0 ? i % 30 : i
    return [`key-${k}`, `v${i} ${'é'.repeat(i % 5)}${'x'.repeat(i % 300)}`]
  })
}

/** What the build must hold: the last value of each key. */
function expected(recs: readonly [string, string][]): Map<string, string> {
  return new Map(recs)
}

async function input(n: number): Promise<{ file: string; recs: [string, string][] }> {
  const file = path('in.tsv')
  const recs = records(n)
  await writeInput(file, 'tsv', recs)
  return { file, recs }
}

function options(file: string, o: Partial<BuildOptions> = {}): BuildOptions {
  return {
    inputs: [file],
    format: 'tsv',
    cluster: cluster(3),
    store: 'st',
    output: path('out'),
    version: 11,
    replication: 2,
    layout: 'partitions',
    onDuplicate: 'last',
    workers: 2,
    ...o,
  }
}

/**
 * One partition chunk read at file level (headers, then every record, CRC-checked): the
 * store readers are not needed to check what the builder wrote.
 */
function readChunk(dir: string, partition: number, chunk: number): { fileId: Buffer; records: [string, string][] } {
  const dataFile = join(dir, partitionDataFileName(partition, chunk))
  const indexFile = join(dir, partitionIndexFileName(partition, chunk))
  const data = readFileSync(dataFile)
  const index = readFileSync(indexFile)
  const dh = decodeDataHeader(data.subarray(0, HEADER_SIZE), dataFile)
  const ih = decodeIndexHeader(index.subarray(0, HEADER_SIZE), indexFile)
  expect(ih.fileId.equals(dh.fileId)).toBe(true)
  expect([dh.chunk, ih.chunk]).toEqual([chunk, chunk])
  expect(ih.entryCount).toBe(dh.recordCount)
  expect(ih.dataSize).toBe(data.length)
  const fd = openSync(dataFile, 'r')
  try {
    const recs: [string, string][] = []
    for (const r of walkRecords(fd, HEADER_SIZE, data.length, dataFile)) recs.push([r.key.toString('utf8'), r.value.toString('utf8')])
    expect(recs).toHaveLength(dh.recordCount)
    return { fileId: dh.fileId, records: recs }
  } finally {
    closeSync(fd)
  }
}

test('every key once, in the chunk file of its master partition and chunk, with its last value; files carry the partition file id', async () => {
  const { file, recs } = await input(3000)
  const o = options(file, { chunks: 3 })
  const summary = await buildStore(o)
  expect(summary.layout).toBe('partitions')
  expect(summary.duplicates).toBe(recs.length - expected(recs).size)
  const m = await readManifest(o.output)
  expect(m).toMatchObject({ formatMajor: 2, store: 'st', version: 11, dataVersion: 11, partitions: 12, chunks: 3, replication: 2 })
  expect(m.records).toBe(expected(recs).size)
  const hasher = await createKeyHasher('md5')
  const seen = new Map<string, string>()
  for (let p = 0; p < 12; p++)
    for (let c = 0; c < 3; c++) {
      const chunk = readChunk(o.output, p, c)
      expect(chunk.fileId.equals(partitionChunkFileId('st', 11, p, c))).toBe(true)
      expect(chunk.records).toHaveLength(m.partitionFiles[p]!.chunkRecords[c]!)
      for (const [k, v] of chunk.records) {
        const h = hasher.hash(Buffer.from(k))
        expect([masterPartition(h, 12), chunkOf(h, 3)]).toEqual([p, c])
        expect(seen.has(k)).toBe(false)
        seen.set(k, v)
      }
    }
  expect(seen).toEqual(expected(recs))
  // The manifest's sizes and checksums are the files'.
  for (const e of m.partitionFiles)
    for (const f of e.files) {
      expect(readFileSync(join(o.output, f.name)).length).toBe(f.size)
      expect(await checksumFile(join(o.output, f.name))).toBe(f.checksum)
    }
  expect(readdirSync(o.output).sort()).toEqual(['metadata.json', ...m.partitionFiles.flatMap((e) => e.files.map((f) => f.name))].sort())
  // What each node is told it holds: its master and replica partitions, 2 × 3 nodes = every record twice.
  const views = [0, 1, 2].map((id) => nodeView(m, id))
  expect(views.reduce((s, v) => s + v.records, 0)).toBe(2 * m.records)
  expect(summary.nodes.map((n) => n.records)).toEqual(views.map((v) => v.records))
})

test('partition files are the same bytes whatever the replication and node count; only the layout and replication of metadata.json differ', async () => {
  const { file } = await input(2000)
  const outs: string[] = []
  for (const [nodes, replication] of [
    [3, 1],
    [3, 2],
    [3, 3],
    [5, 2],
  ] as const) {
    const o = options(file, { cluster: cluster(nodes), replication })
    await buildStore(o)
    outs.push(o.output)
  }
  const [first, ...rest] = outs.map(fileTree)
  const strip = (json: Buffer): unknown => {
    const m = JSON.parse(json.toString('utf8')) as Record<string, unknown> & { build: Record<string, unknown> }
    const { layout: _l, replication: _r, build, ...kept } = m
    const { replication: _br, ...buildKept } = build
    return { ...kept, build: buildKept }
  }
  for (const tree of rest) {
    expect([...tree.keys()]).toEqual([...first!.keys()])
    for (const [name, bytes] of first!) {
      if (name === 'metadata.json') expect(strip(tree.get(name)!)).toEqual(strip(bytes))
      else expect(tree.get(name)!.equals(bytes)).toBe(true)
    }
  }
  // One chunk per partition: the default from 2000 records and 12 partitions.
  expect(first!.has('p11-c0.data')).toBe(true)
  expect(first!.has('p0-c1.data')).toBe(false)
  expect(JSON.parse(readFileSync(join(outs[3]!, 'metadata.json'), 'utf8'))).toMatchObject({
    replication: 2,
    layout: cluster(5).nodes.map((n) => ({ id: n.id, partitions: n.partitions })),
  })
})

test('partitions no key falls in still get their (empty) chunk files, so every node view is complete', async () => {
  const file = path('few.tsv')
  await writeInput(file, 'tsv', [
    ['a', '1'],
    ['b', '2'],
  ])
  const o = options(file, { chunks: 2, replication: 3 })
  await buildStore(o)
  const m = await readManifest(o.output)
  expect(m.records).toBe(2)
  expect(m.partitionFiles.filter((e) => e.records === 0).length).toBeGreaterThanOrEqual(10)
  for (const id of [0, 1, 2]) {
    const view = nodeView(m, id)
    expect(view.held).toEqual(Array.from({ length: 12 }, (_, p) => p))
    for (const f of view.files) expect(existsSync(join(o.output, f.name))).toBe(true)
  }
  // An empty chunk is a whole one: headers with the partition's file id, no record.
  for (const e of m.partitionFiles.filter((x) => x.records === 0))
    for (const c of [0, 1]) expect(readChunk(o.output, e.partition, c).records).toEqual([])
})

test('a failed format-2 build leaves no output and no temp directory', async () => {
  const { file } = await input(500)
  const o = options(file, { onDuplicate: 'error', chunks: 4 })
  await expect(buildStore(o)).rejects.toMatchObject({ code: 'RO_DUPLICATE_KEY' })
  expect(existsSync(o.output)).toBe(false)
  expect(readdirSync(tmp.dir).filter((n) => n.includes('rostore-tmp'))).toEqual([])
})

test('rostore build writes format 2 by default (--layout partitions); --layout nodes writes format 1', () => {
  const file = path('cli.tsv')
  writeFileSync(file, 'k1\tv1\nk2\tv2\n')
  const clusterFile = path('cluster.json')
  writeFileSync(clusterFile, JSON.stringify(cluster(3)))
  const run = (out: string, extra: string[]): ReturnType<typeof spawnSync> =>
    spawnSync(
      process.execPath,
      [
        cliPath(),
        'build',
        '--input',
        file,
        '--format',
        'tsv',
        '--cluster',
        clusterFile,
        '--store',
        'st',
        '--output',
        out,
        '--version',
        '3',
        ...extra,
      ],
      { encoding: 'utf8' },
    )
  const two = path('cli-2')
  const r = run(two, ['--layout', 'partitions', '--chunks', '2'])
  expect(r.status).toBe(0)
  expect(r.stdout).toMatch(/2 chunks per partition/)
  expect(readdirSync(two)).toContain('p11-c1.index')
  const plain = path('cli-default')
  expect(run(plain, []).status).toBe(0)
  expect(readdirSync(plain)).toContain('metadata.json')
  expect(readdirSync(plain)).toContain('p11-c0.data')
  const one = path('cli-1')
  expect(run(one, ['--layout', 'nodes']).status).toBe(0)
  expect(readdirSync(one).sort()).toEqual(['node-0', 'node-1', 'node-2'])
  const bad = run(path('cli-bad'), ['--layout', 'racks'])
  expect(bad.status).not.toBe(0)
  expect(bad.stderr).toMatch(/layout/)
})
