import { copyFileSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildRing, heldPartitions, masterPartition } from '../../../../cluster/routing'
import { isStoreError } from '../../../../common/errors'
import { createHash } from 'node:crypto'
import { readMetadata } from '../../../../formats/store/layout/metadata-io'
import { MULTIGET_FRAMING } from '../../../../formats/store/chunk/value-framing'
import { decodeValues } from '../../../../formats/wire/multiget'
import { RespWriter } from '../../../../formats/wire/resp-writer'
import { DEFAULT_PARTITIONED_LAYOUT, makeBuildOutput, makePartitionedNodeDir } from '../../../../testkit/stores/make-partitioned'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { openIn, READER_MODES } from './reader-modes'

/** Format-2 node directories (partition files) read by every reader: held partitions found, the others absent. */
const tmp = makeTmp()
afterAll(tmp.cleanup)

const N = 600
const keyOf = (i: number): string => `key-${i}`
const valueOf = (i: number): string => (i % 13 === 0 ? '' : `value ${i} ${'y'.repeat(i % 41)}`)
const records = (): [string, string][] => Array.from({ length: N }, (_, i) => [keyOf(i), valueOf(i)])
const partitionOf = (key: string): number => masterPartition(createHash('md5').update(key).digest(), 6)
const heldBy = (nodeId: number): number[] => heldPartitions(buildRing(DEFAULT_PARTITIONED_LAYOUT), 2, nodeId)

let buildDir: string
let manifest: Awaited<ReturnType<typeof makeBuildOutput>>
const nodeDirs: string[] = []

beforeAll(async () => {
  buildDir = tmp.fresh()
  manifest = await makeBuildOutput(buildDir, records(), { chunks: 2 })
  for (const id of [0, 1, 2]) {
    const dir = tmp.fresh()
    await makePartitionedNodeDir(buildDir, manifest, id, dir)
    nodeDirs.push(dir)
  }
})

test('the fixture spreads keys over every partition, and each node holds 4 of 6', () => {
  const perPartition = new Array<number>(6).fill(0)
  for (let i = 0; i < N; i++) perPartition[partitionOf(keyOf(i))]!++
  expect(perPartition.every((n) => n > 50)).toBe(true)
  expect(manifest.partitionFiles.map((e) => e.records)).toEqual(perPartition)
  expect([0, 1, 2].map(heldBy)).toEqual([
    [0, 2, 3, 5],
    [0, 1, 3, 4],
    [1, 2, 4, 5],
  ])
})

describe.each(READER_MODES)('%s reader over a format-2 node directory', (mode) => {
  test.each([0, 1, 2])('node %i finds every key of its partitions and none of the others', async (id) => {
    const r = await openIn(mode, nodeDirs[id] as string)
    try {
      const held = new Set(heldBy(id))
      let found = 0
      for (let i = 0; i < N; i++) {
        const v = r.get(keyOf(i))
        if (held.has(partitionOf(keyOf(i)))) {
          expect(v?.toString()).toBe(valueOf(i))
          found++
        } else expect(v).toBeUndefined()
      }
      expect(found).toBe(r.metadata.records)
      expect(r.get('no such key')).toBeUndefined()
    } finally {
      r.close()
    }
  })

  test('getMany across partitions answers in request order, sync, async and framed', async () => {
    const r = await openIn(mode, nodeDirs[1] as string)
    try {
      const held = new Set(heldBy(1))
      // Reversed and interleaved: slots and partitions out of order in the request.
      const order = Array.from({ length: N }, (_, i) => (i % 2 === 0 ? N - 1 - i : i))
      const keys = order.map(keyOf)
      const expected = order.map((i) => (held.has(partitionOf(keyOf(i))) ? valueOf(i) : undefined))
      expect(r.getMany(keys).map((v) => v?.toString())).toEqual(expected)
      expect((await r.getManyAsync(keys)).map((v) => v?.toString())).toEqual(expected)
      const framed = decodeValues(r.getManyFramed(keys, MULTIGET_FRAMING))
      expect(framed.map((v) => (v === undefined ? undefined : Buffer.from(v).toString()))).toEqual(expected)
      const absent = keys.find((k) => !held.has(partitionOf(k))) as string
      expect(await r.getAsync(absent)).toBeUndefined()
      // A GET reply written in place (RESP): absent for the other partition, the value for a held one.
      const present = keys.find((k) => held.has(partitionOf(k))) as string
      const sink = new RespWriter(8)
      const bulk = { prefix: new Uint8Array(0), length: 'resp' as const, absent: Buffer.from('$-1\r\n'), suffix: Buffer.from('\r\n') }
      expect([r.getFramedInto(absent, bulk, sink), r.getFramedInto(present, bulk, sink)]).toEqual([false, true])
      const v = valueOf(Number(present.slice(4)))
      expect(sink.take().toString()).toBe(`$-1\r\n$${Buffer.byteLength(v)}\r\n${v}\r\n`)
    } finally {
      r.close()
    }
  })

  test('answers as a format-1 directory of the same records does', async () => {
    const held = new Set(heldBy(2))
    const f1 = tmp.fresh()
    await makeNodeDir(
      f1,
      records().filter(([k]) => held.has(partitionOf(k))),
      { chunks: 3 },
    )
    const a = await openIn(mode, nodeDirs[2] as string)
    const b = await openIn(mode, f1)
    try {
      const keys = Array.from({ length: N + 20 }, (_, i) => keyOf(i))
      expect(a.getMany(keys).map((v) => v?.toString())).toEqual(b.getMany(keys).map((v) => v?.toString()))
      expect(a.metadata.records).toBe(b.metadata.records)
    } finally {
      a.close()
      b.close()
    }
  })

  test('a file of another partition put in place of a held one is refused by its file id', async () => {
    const dir = tmp.fresh()
    await makePartitionedNodeDir(buildDir, manifest, 0, dir)
    // Node 0 holds partitions 0 and 2: partition 1's chunk 0 goes where partition 0's was,
    // listed as if it belonged there (sizes and checksums fixed up), so only the id can tell.
    const meta = JSON.parse(readFileSync(join(dir, 'metadata.json'), 'utf8')) as { files: { name: string }[]; chunkRecords: number[] }
    for (const kind of ['index', 'data']) copyFileSync(join(buildDir, `p1-c0.${kind}`), join(dir, `p0-c0.${kind}`))
    const other = manifest.partitionFiles[1]!
    meta.files[0] = { ...other.files[0]!, name: 'p0-c0.index' }
    meta.files[1] = { ...other.files[1]!, name: 'p0-c0.data' }
    meta.chunkRecords[0] = other.chunkRecords[0]!
    ;(meta as { records?: number }).records = meta.chunkRecords.reduce((a, b) => a + b, 0)
    writeFileSync(join(dir, 'metadata.json'), JSON.stringify(meta))
    const err = await openIn(mode, dir).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isStoreError(err) && err.code).toBe('RO_CORRUPT')
    expect(String((err as Error).message)).toMatch(/p0-c0\.(index|data): belongs to another store, version, node, partition or chunk/)
  })
})

describe('metadata.json of format 2 is validated before any file is read', () => {
  async function edited(edit: (m: Record<string, unknown>) => void): Promise<unknown> {
    const dir = tmp.fresh()
    await makePartitionedNodeDir(buildDir, manifest, 0, dir)
    const m = JSON.parse(readFileSync(join(dir, 'metadata.json'), 'utf8')) as Record<string, unknown>
    edit(m)
    writeFileSync(join(dir, 'metadata.json'), JSON.stringify(m))
    return readMetadata(dir).then(
      () => undefined,
      (e: unknown) => e,
    )
  }
  const codeOf = (e: unknown): string | false => isStoreError(e) && e.code

  test('a node view as written reads back', async () => {
    const meta = await readMetadata(nodeDirs[0] as string)
    expect([meta.formatMajor, meta.held, meta.dataVersion, meta.chunkRecords.length]).toEqual([2, [0, 2, 3, 5], 1, 8])
  })

  test('an unknown major is RO_BAD_FORMAT, naming the majors understood', async () => {
    const e = await edited((m) => (m['formatMajor'] = 3))
    expect(codeOf(e)).toBe('RO_BAD_FORMAT')
    expect(String(e)).toMatch(/format major version 3, this reader understands 1 .* and 2/)
  })

  test('the build output manifest is not a node directory', async () => {
    const e = await readMetadata(buildDir).then(
      () => undefined,
      (x: unknown) => x,
    )
    expect(codeOf(e)).toBe('RO_BAD_FORMAT')
  })

  test.each([
    [
      'held not what the layout gives the node',
      (m: Record<string, unknown>) => (m['held'] = [0, 1, 3, 5]),
      /"held" \[0, 1, 3, 5\] is not what the layout gives node 0: \[0, 2, 3, 5\]/,
    ],
    ['held out of order', (m: Record<string, unknown>) => (m['held'] = [2, 0, 3, 5]), /ascending/],
    ['held past P', (m: Record<string, unknown>) => (m['held'] = [0, 2, 3, 6]), /not a partition of the layout/],
    ['held missing', (m: Record<string, unknown>) => delete m['held'], /"held" must list/],
    ['dataVersion newer than version', (m: Record<string, unknown>) => (m['dataVersion'] = 2), /"dataVersion" must be an integer from 1/],
    ['dataVersion 0', (m: Record<string, unknown>) => (m['dataVersion'] = 0), /"dataVersion"/],
    ['files out of slot order', (m: Record<string, unknown>) => (m['files'] as unknown[]).reverse(), /"files"\[0\] must be p0-c0\.index/],
    [
      'a format-1 file name',
      (m: Record<string, unknown>) => ((m['files'] as { name: string }[])[0]!.name = '0.index'),
      /must be p0-c0\.index/,
    ],
    [
      'a chunk slot missing',
      (m: Record<string, unknown>) => (m['chunkRecords'] as number[]).pop(),
      /one record count per chunk slot \(8\)/,
    ],
  ])('%s is RO_CORRUPT', async (_name, edit, message) => {
    const e = await edited(edit)
    expect(codeOf(e)).toBe('RO_CORRUPT')
    expect(String(e)).toMatch(message)
  })

  test('format 1 may not carry held or dataVersion', async () => {
    const dir = tmp.fresh()
    await makeNodeDir(dir, records().slice(0, 10))
    const m = JSON.parse(readFileSync(join(dir, 'metadata.json'), 'utf8')) as Record<string, unknown>
    m['held'] = [0]
    writeFileSync(join(dir, 'metadata.json'), JSON.stringify(m))
    const e = await readMetadata(dir).then(
      () => undefined,
      (x: unknown) => x,
    )
    expect(codeOf(e)).toBe('RO_CORRUPT')
  })
})
