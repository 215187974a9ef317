import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import { buildSide, diffSides, type DiffKind } from '../../../client/dump/diff'
import type { Cluster } from '../../../cluster/cluster'
import { writeInput } from '../../../testkit/stores/input-files'
import { makeTmp } from '../../../testkit/stores/tmp'

jest.setTimeout(60_000)
const tmp = makeTmp()
afterAll(() => tmp.cleanup())

const cluster: Cluster = {
  name: 'c',
  nodes: [
    { id: 0, host: '127.0.0.1', port: 1, partitions: [0, 2] },
    { id: 1, host: '127.0.0.1', port: 2, partitions: [1, 3] },
  ],
}

async function build(name: string, records: [string, string][], chunks: number, keyHash?: string): Promise<string> {
  const input = join(tmp.dir, `${name}.tsv`)
  await writeInput(input, 'tsv', records)
  const output = join(tmp.dir, name)
  await buildStore({ inputs: [input], format: 'tsv', cluster, store: 's', output, version: 1, replication: 2, chunks, workers: 1, keyHash })
  return output
}

/** Old: k0..k1999. New: every 10th removed, every 7th (not removed) changed, 25 added. */
function versions(): { old: [string, string][]; neu: [string, string][]; expected: Record<DiffKind, string[]> } {
  const old: [string, string][] = []
  const neu: [string, string][] = []
  const expected: Record<DiffKind, string[]> = { added: [], removed: [], changed: [] }
  for (let i = 0; i < 2000; i++) {
    old.push([`k${i}`, `v${i}`])
    if (i % 10 === 0) expected.removed.push(`k${i}`)
    else if (i % 7 === 0) {
      neu.push([`k${i}`, `w${i}`])
      expected.changed.push(`k${i}`)
    } else neu.push([`k${i}`, `v${i}`])
  }
  for (let i = 0; i < 25; i++) {
    neu.push([`new${i}`, ''])
    expected.added.push(`new${i}`)
  }
  return { old, neu, expected }
}

// md5-collide-2 keeps 2 bits of the 8-byte prefix: nearly every key shares its prefix
// with hundreds of others, so the grouping of equal prefixes is what is tested.
test.each([
  ['md5, different chunk counts', undefined, 3, 5],
  ['md5-collide-2 (prefixes collide everywhere)', 'md5-collide-2', 2, 2],
])('%s: the counts and keys of a merge walk', async (name, keyHash, chunksOld, chunksNew) => {
  const { old, neu, expected } = versions()
  const tag = name.replace(/\W+/g, '-')
  const a = await build(`${tag}-old`, old, chunksOld, keyHash)
  const b = await build(`${tag}-new`, neu, chunksNew, keyHash)
  const seen: Record<DiffKind, string[]> = { added: [], removed: [], changed: [] }
  const counts = await diffSides(buildSide(a, { blockBytes: 4096 }), buildSide(b), (kind, key) => void seen[kind].push(key.toString()))
  expect(counts).toEqual({
    added: expected.added.length,
    removed: expected.removed.length,
    changed: expected.changed.length,
    unchanged: 2000 - expected.removed.length - expected.changed.length,
  })
  for (const k of ['added', 'removed', 'changed'] as const) expect(seen[k].sort()).toEqual(expected[k].sort())
  expect(await diffSides(buildSide(a), buildSide(a))).toEqual({ added: 0, removed: 0, changed: 0, unchanged: 2000 })
})
