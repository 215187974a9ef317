import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import { buildSide, diffSides, type DiffKind } from '../../../client/dump/diff'
import { dumpBuild } from '../../../client/dump/dump'
import type { Cluster } from '../../../cluster/cluster'
import { masterPartition } from '../../../cluster/routing'
import { writeInput } from '../../../testkit/stores/input-files'
import { DEFAULT_PARTITIONED_LAYOUT, makeBuildOutput } from '../../../testkit/stores/make-partitioned'
import { makeTmp } from '../../../testkit/stores/tmp'

/** rostore diff and dump --from-build over format-2 build outputs (a version manifest and every partition's files). */
jest.setTimeout(60_000)
const tmp = makeTmp()
afterAll(() => tmp.cleanup())

const cluster: Cluster = {
  name: 'c',
  nodes: DEFAULT_PARTITIONED_LAYOUT.map((n) => ({ id: n.id, host: '127.0.0.1', port: 1 + n.id, partitions: [...n.partitions] })),
}
const records = (n: number, value = (i: number) => `v${i}`): [string, string][] => Array.from({ length: n }, (_, i) => [`k${i}`, value(i)])

async function dumped(dir: string, partitions?: number[]): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  await dumpBuild({ dir, partitions }, async () => ({ write: (k, v) => void out.set(k.toString(), (v as Buffer).toString()) }))
  return out
}

test('dump --from-build reads every partition of a format-2 build output once, or the ones asked for', async () => {
  const dir = tmp.fresh()
  await makeBuildOutput(dir, records(500), { chunks: 2 })
  const all = await dumped(dir)
  expect(all.size).toBe(500)
  expect(all.get('k123')).toBe('v123')
  const some = await dumped(dir, [1, 4])
  const expected = records(500)
    .map(([k]) => k)
    .filter((k) => [1, 4].includes(masterPartition(createHash('md5').update(k).digest(), 6)))
  expect([...some.keys()].sort()).toEqual(expected.sort())
})

test('diff between a format-1 build and a format-2 build of the same records finds nothing; changes are found', async () => {
  const input = join(tmp.dir, 'in.tsv')
  await writeInput(input, 'tsv', records(800))
  const f1 = join(tmp.dir, 'f1')
  await buildStore({
    inputs: [input],
    format: 'tsv',
    cluster,
    store: 'test',
    output: f1,
    version: 1,
    replication: 2,
    chunks: 3,
    workers: 1,
  })
  const f2 = tmp.fresh()
  await makeBuildOutput(f2, records(800), { chunks: 2 })
  expect(await diffSides(buildSide(f1), buildSide(f2))).toEqual({ added: 0, removed: 0, changed: 0, unchanged: 800 })

  const f2b = tmp.fresh()
  await makeBuildOutput(
    f2b,
    records(810, (i) => (i % 100 === 0 ? `w${i}` : `v${i}`)),
    { chunks: 4 },
  )
  const seen: Record<DiffKind, string[]> = { added: [], removed: [], changed: [] }
  const counts = await diffSides(buildSide(f2), buildSide(f2b), (kind, key) => void seen[kind].push(key.toString()))
  expect(counts).toEqual({ added: 10, removed: 0, changed: 8, unchanged: 792 })
  expect(seen.changed.sort()).toEqual(['k0', 'k100', 'k200', 'k300', 'k400', 'k500', 'k600', 'k700'])
})
