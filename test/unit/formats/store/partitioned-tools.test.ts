import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildRing, heldPartitions, masterPartition } from '../../../../cluster/routing'
import { isStoreError } from '../../../../common/errors'
import { cliPath } from '../../../../common/paths'
import { dumpRecords } from '../../../../formats/store/scan/dump'
import { readMetadata } from '../../../../formats/store/layout/metadata-io'
import { openVersion, walkPartitions } from '../../../../formats/store/scan/partition-walk'
import { verifyStore } from '../../../../formats/store/scan/verify'
import { verifyBuildOrNode } from '../../../../formats/store/scan/verify-tree'
import { DEFAULT_PARTITIONED_LAYOUT, makeBuildOutput, makePartitionedNodeDir } from '../../../../testkit/stores/make-partitioned'
import { makeTmp } from '../../../../testkit/stores/tmp'

/** verify, inspect, dumps and partition walks over format-2 directories (node views and build outputs). */
const tmp = makeTmp()
afterAll(tmp.cleanup)

const N = 400
const keyOf = (i: number): string => `k${i}`
const valueOf = (i: number): string => `v${i}`
const partitionOf = (key: string): number => masterPartition(createHash('md5').update(key).digest(), 6)
const held1 = heldPartitions(buildRing(DEFAULT_PARTITIONED_LAYOUT), 2, 1)

let buildDir: string
let manifest: Awaited<ReturnType<typeof makeBuildOutput>>
let node1: string

beforeAll(async () => {
  buildDir = tmp.fresh()
  manifest = await makeBuildOutput(
    buildDir,
    Array.from({ length: N }, (_, i) => [keyOf(i), valueOf(i)] as [string, string]),
    { chunks: 3 },
  )
  node1 = tmp.fresh()
  await makePartitionedNodeDir(buildDir, manifest, 1, node1)
})

const failure = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  )

describe('verify', () => {
  test('a format-2 node directory passes, every held record counted', async () => {
    const r = await verifyStore(node1)
    const expected = Array.from({ length: N }, (_, i) => keyOf(i)).filter((k) => held1.includes(partitionOf(k))).length
    expect([r.nodeId, r.records, r.files]).toEqual([1, expected, held1.length * 3 * 2])
  })

  test('a format-2 build output passes as one tree: every partition, no node', async () => {
    const reports = await verifyBuildOrNode(buildDir)
    expect(reports.map((r) => [r.nodeId, r.records, r.files])).toEqual([[-1, N, 6 * 3 * 2]])
  })

  test('a changed byte of a partition file is a checksum mismatch', async () => {
    const dir = tmp.fresh()
    await makeBuildOutput(
      dir,
      [
        ['a', '1'],
        ['b', '2'],
        ['c', '3'],
      ],
      { chunks: 1 },
    )
    const file = join(dir, `p${partitionOf('a')}-c0.data`)
    const bytes = readFileSync(file)
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 1
    writeFileSync(file, bytes)
    expect(((await failure(verifyStore(dir))) as { code?: string }).code).toBe('RO_CHECKSUM_MISMATCH')
  })

  test("a node's manifest.json must narrow to its metadata.json", async () => {
    const dir = tmp.fresh()
    await makePartitionedNodeDir(buildDir, manifest, 1, dir)
    const m = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { partitionFiles: { files: { checksum: string }[] }[] }
    m.partitionFiles[held1[0] as number]!.files[0]!.checksum = '0123456789abcdef'
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(m))
    const e = await failure(verifyStore(dir))
    expect(isStoreError(e) && e.code).toBe('RO_CORRUPT')
    expect(String(e)).toMatch(/manifest\.json: does not narrow to node 1's metadata\.json/)
  })

  test('a file of a partition the node does not hold is not part of its directory', async () => {
    const dir = tmp.fresh()
    await makePartitionedNodeDir(buildDir, manifest, 1, dir)
    const notHeld = [0, 1, 2, 3, 4, 5].find((p) => !held1.includes(p)) as number
    copyFileSync(join(buildDir, `p${notHeld}-c0.index`), join(dir, `p${notHeld}-c0.index`))
    const e = await failure(verifyStore(dir))
    expect(isStoreError(e) && e.code).toBe('RO_CORRUPT')
    expect(String(e)).toMatch(new RegExp(`p${notHeld}-c0\\.index: file not listed in the metadata`))
  })
})

describe('dumps and walks', () => {
  test('dumpRecords walks every slot of a node view: exactly the held records', async () => {
    const meta = await readMetadata(node1)
    const got = [...dumpRecords(node1, meta)]
    const expected = Array.from({ length: N }, (_, i) => keyOf(i)).filter((k) => held1.includes(partitionOf(k)))
    expect(got.map((r) => r.key).sort()).toEqual(expected.sort())
    expect(got.every((r) => r.value === `v${r.key.slice(1)}`)).toBe(true)
    expect(new Set(got.map((r) => r.chunk)).size).toBe(held1.length * 3)
  })

  test('a walk of some held partitions reads those and announces every slot', async () => {
    const meta = await readMetadata(node1)
    const want = new Set([held1[1] as number, held1[3] as number])
    const v = await openVersion(node1, meta)
    const keys: string[] = []
    const announced: number[] = []
    try {
      for await (const item of walkPartitions(v, { partitions: want, partitionCount: 6 })) {
        if (item.key === undefined) announced.push(item.chunk)
        else keys.push(item.key.toString())
      }
    } finally {
      await v.close()
    }
    const expected = Array.from({ length: N }, (_, i) => keyOf(i)).filter((k) => want.has(partitionOf(k)))
    expect(keys.sort()).toEqual(expected.sort())
    expect(announced).toEqual(Array.from({ length: held1.length * 3 }, (_, s) => s))
  })

  test('rostore inspect prints the node view and looks keys up', () => {
    const inHeld = Array.from({ length: N }, (_, i) => keyOf(i)).find((k) => held1.includes(partitionOf(k))) as string
    const notHeld = Array.from({ length: N }, (_, i) => keyOf(i)).find((k) => !held1.includes(partitionOf(k))) as string
    const r = spawnSync(process.execPath, [cliPath(), 'inspect', node1, '--get', inHeld, '--get', notHeld, '--records', '--limit', '3'], {
      encoding: 'utf8',
    })
    expect(r.status).toBe(0)
    const lines = r.stdout.trim().split('\n')
    const head = JSON.parse(lines.slice(0, lines.length - 5).join('\n')) as { formatMajor: number; held: number[]; files: number }
    expect([head.formatMajor, head.held, head.files]).toEqual([2, held1, held1.length * 3 * 2])
    const gets = lines.slice(-5, -3).map((l) => JSON.parse(l) as { key: string; found: boolean })
    expect(gets).toEqual([
      { key: inHeld, found: true, value: `v${inHeld.slice(1)}` },
      { key: notHeld, found: false },
    ])
    expect(lines.slice(-3).map((l) => (JSON.parse(l) as { encoding: string }).encoding)).toEqual(['utf8', 'utf8', 'utf8'])
  })
})
