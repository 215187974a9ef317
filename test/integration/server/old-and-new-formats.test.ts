import { cpSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import { buildRing, heldPartitions, masterPartition } from '../../../cluster/routing'
import { packageRoot } from '../../../common/paths'
import { DEFAULT_PARTITIONED_LAYOUT, makeBuildOutput, makePartitionedNodeDir } from '../../../testkit/stores/make-partitioned'
import { startSingleNode, type NodeProcess } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * One node serves a format-1 version (the committed fixture, built by the format-1
 * builder) and a format-2 node directory side by side: a node upgraded in place keeps
 * serving its old-layout versions, and serves the new ones.
 */
jest.setTimeout(60_000)
const tmp = makeTmp()
const TOKEN = 'old-and-new-token'
let node: NodeProcess | undefined

afterAll(async () => {
  if (node?.running) await node.kill9()
  tmp.cleanup()
})

const fixture = join(packageRoot(), 'test', 'fixtures', 'format1-node')
const md5 = (k: string): Buffer => createHash('md5').update(k).digest()

test('format-1 and format-2 versions installed on one node answer their keys over HTTP', async () => {
  const f1 = join(tmp.dir, 'f1')
  cpSync(join(fixture, 'node-0'), f1, { recursive: true })
  const build = tmp.fresh()
  const records = Array.from({ length: 300 }, (_, i) => [`n${i}`, `new ${i}`] as [string, string])
  const manifest = await makeBuildOutput(build, records, { store: 'fresh', version: 3, chunks: 2 })
  const f2 = join(tmp.dir, 'f2')
  await makePartitionedNodeDir(build, manifest, 0, f2)

  node = await startSingleNode({ dir: join(tmp.dir, 'node'), token: TOKEN })
  await node.install('fixture', f1, { swap: true })
  await node.install('fresh', f2, { swap: true })

  // The fixture's layout: node 0 holds partitions 0 and 2 of 4 (replication 1).
  const input = readFileSync(join(fixture, 'input.tsv'), 'utf8').trimEnd().split('\n')
  const old = input.map((l) => l.split('\t') as [string, string])
  const oldMine = old.filter(([k]) => [0, 2].includes(masterPartition(md5(k), 4)))
  expect(oldMine.length).toBe(152)
  for (const [k, v] of oldMine.slice(0, 40)) {
    const r = await node.request(`/stores/fixture/keys/${encodeURIComponent(k)}`)
    expect([r.status, r.body.toString()]).toEqual([200, v])
  }
  const oldOther = old.find(([k]) => ![0, 2].includes(masterPartition(md5(k), 4))) as [string, string]
  expect((await node.request(`/stores/fixture/keys/${encodeURIComponent(oldOther[0])}`)).status).toBe(421)

  const held = heldPartitions(buildRing(DEFAULT_PARTITIONED_LAYOUT), 2, 0)
  const mine = records.filter(([k]) => held.includes(masterPartition(md5(k), 6)))
  for (const [k, v] of mine.slice(0, 40)) {
    const r = await node.request(`/stores/fresh/keys/${encodeURIComponent(k)}`)
    expect([r.status, r.body.toString()]).toEqual([200, v])
  }
  const other = records.find(([k]) => !held.includes(masterPartition(md5(k), 6))) as [string, string]
  expect((await node.request(`/stores/fresh/keys/${encodeURIComponent(other[0])}`)).status).toBe(421)
  const absent = Array.from({ length: 50 }, (_, i) => `absent${i}`).find((k) => held.includes(masterPartition(md5(k), 6))) as string
  expect((await node.request(`/stores/fresh/keys/${absent}`)).status).toBe(404)

  // The dump stream walks the node's held partitions, slot by slot.
  const dump = await node.admin('GET', '/stores/fresh/dump/keys?format=jsonl')
  expect(dump.status).toBe(200)
  expect(Number(dump.headers['x-rostore-chunks'])).toBe(held.length * 2)
  const lines = dump.body
    .toString()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { key?: string })
  expect(lines.flatMap((l) => (l.key === undefined ? [] : [l.key])).sort()).toEqual(mine.map(([k]) => k).sort())
})
