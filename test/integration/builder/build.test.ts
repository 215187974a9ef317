import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore, type BuildSummary } from '../../../builder/engines/local/build-job'
import type { BuildOptions } from '../../../builder/build-options'
import { parseCluster } from '../../../cluster/cluster'
import { buildRing, routeHash } from '../../../cluster/routing'
import { isStoreError } from '../../../common/errors'
import { INPUT_FORMATS } from '../../../formats/input/types'
import { createKeyHasher } from '../../../formats/store/layout/key-hash'
import { openStore, type StoreReader } from '../../../formats/store/read/store-reader'
import { verifyStore } from '../../../formats/store/scan/verify'
import { writeInput } from '../../../testkit/stores/input-files'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp()
afterAll(tmp.cleanup)
let seq = 0
const path = (name: string) => join(tmp.dir, `${seq++}-${name}`)

const cluster = parseCluster({
  name: 'test',
  nodes: [
    { id: 0, host: '127.0.0.1', port: 7100, partitions: [0, 3, 6] },
    { id: 1, host: '127.0.0.1', port: 7101, partitions: [1, 4, 7] },
    { id: 2, host: '127.0.0.1', port: 7102, partitions: [2, 5, 8] },
  ],
})

function records(n: number): [string, string][] {
  return Array.from({ length: n }, (_, i) => [`key-${i}`, i % 13 === 0 ? '' : `v${i},"quoted"\t${'é'.repeat(i % 7)}`])
}

async function build(input: string | string[], o: Partial<BuildOptions> = {}): Promise<{ out: string; summary: BuildSummary }> {
  const out = path('out')
  const summary = await buildStore({
    inputs: Array.isArray(input) ? input : [input],
    format: 'tsv',
    cluster,
    store: 'st',
    output: out,
    version: 7,
    replication: 2,
    chunks: 3,
    workers: 2,
    // Node directories, one per node, read node by node below (format 2: partition-build.test.ts).
    layout: 'nodes',
    ...o,
  })
  return { out, summary }
}

async function openAll(out: string): Promise<Map<number, StoreReader>> {
  const m = new Map<number, StoreReader>()
  for (const n of cluster.nodes) m.set(n.id, await openStore(join(out, `node-${n.id}`)))
  return m
}

function closeAll(readers: Map<number, StoreReader>): void {
  for (const r of readers.values()) r.close()
}

async function expectErrorCode(p: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  try {
    await p
  } catch (err) {
    expect(isStoreError(err)).toBe(true)
    expect((err as { code: string }).code).toBe(code)
    if (message) expect((err as Error).message).toMatch(message)
    return
  }
  throw new Error('expected the build to fail')
}

function filesOf(out: string): Map<string, Buffer> {
  const m = new Map<string, Buffer>()
  for (const node of readdirSync(out).sort())
    for (const f of readdirSync(join(out, node)).sort()) m.set(`${node}/${f}`, readFileSync(join(out, node, f)))
  return m
}

describe.each(INPUT_FORMATS)('%s input', (format) => {
  test('round trip: every key on exactly its 2 replica nodes with its exact value; absent keys absent', async () => {
    const recs = records(2000)
    const input = path(`in.${format}`)
    await writeInput(input, format, recs)
    const { out, summary } = await build(input, { format })
    expect(summary.inputRecords).toBe(2000)
    const readers = await openAll(out)
    const hasher = await createKeyHasher()
    const ring = buildRing(cluster.nodes)
    try {
      for (const [k, v] of recs) {
        const owners = routeHash(ring, hasher.hash(Buffer.from(k)), 2)
        for (const [id, r] of readers) {
          const got = r.get(k)
          if (owners.includes(id)) expect(got?.toString('utf8')).toBe(v)
          else expect(got).toBeUndefined()
        }
      }
      for (let i = 0; i < 200; i++) for (const r of readers.values()) expect(r.get(`absent-${i}`)).toBeUndefined()
      const total = [...readers.values()].reduce((s, r) => s + r.metadata.records, 0)
      expect(total).toBe(2 * 2000)
      expect(readers.get(0)!.metadata.valueSerializer).toBe('string')
    } finally {
      closeAll(readers)
    }
    for (const n of cluster.nodes) await verifyStore(join(out, `node-${n.id}`))
  })
})

test('determinism: same input and options give byte-identical files whatever the workers and memory', async () => {
  const input = path('in.tsv')
  await writeInput(input, 'tsv', records(5000))
  const a = filesOf((await build(input, { workers: 1 })).out)
  const b = filesOf((await build(input, { workers: 2, memoryMb: 64 })).out)
  expect([...a.keys()]).toEqual([...b.keys()])
  for (const [name, bytes] of a) expect(b.get(name)!.equals(bytes)).toBe(true)
})

test('spill path: a tiny memory budget spills many runs and gives the same files as the in-memory build', async () => {
  const input = path('in.tsv')
  await writeInput(input, 'tsv', records(30000))
  const big = await build(input, { memoryMb: 512, workers: 1 })
  const tiny = await build(input, { memoryMb: 1, workers: 2 })
  expect(big.summary.runs).toBe(0)
  expect(tiny.summary.runs).toBeGreaterThan(5)
  const a = filesOf(big.out)
  const b = filesOf(tiny.out)
  for (const [name, bytes] of a) expect(b.get(name)!.equals(bytes)).toBe(true)
})

test('compression gzip and snappy round trip through the build', async () => {
  const recs = records(500)
  const input = path('in.tsv')
  await writeInput(input, 'tsv', recs)
  for (const compression of ['gzip', 'snappy'] as const) {
    const { out } = await build(input, { compression, replication: 3 })
    const r = await openStore(join(out, 'node-1'))
    for (const [k, v] of recs) expect(r.get(k)?.toString()).toBe(v)
    expect(r.metadata.compression).toBe(compression)
    r.close()
  }
})

test('forced hash prefix collisions still return the right values', async () => {
  const recs = records(300)
  const input = path('in.tsv')
  await writeInput(input, 'tsv', recs)
  const { out } = await build(input, { keyHash: 'md5-collide-1', replication: 3, chunks: 1 })
  const r = await openStore(join(out, 'node-2'))
  for (const [k, v] of recs) expect(r.get(k)?.toString()).toBe(v)
  expect(r.get('absent')).toBeUndefined()
  r.close()
  await verifyStore(join(out, 'node-2'))
})

describe('duplicate keys', () => {
  let a: string
  let b: string
  beforeAll(async () => {
    a = path('a.tsv')
    b = path('b.tsv')
    writeFileSync(a, 'x\t1\ny\t2\nx\t3\n')
    writeFileSync(b, 'z\t4\nx\t5\n')
  })

  test('by default an error naming the key and both locations, and no output', async () => {
    const out = path('dup')
    await expectErrorCode(
      buildStore({ inputs: [a, b], format: 'tsv', cluster, store: 'st', output: out, version: 1 }),
      'RO_DUPLICATE_KEY',
      new RegExp(`duplicate key "x": ${a}:1 and ${a}:3`),
    )
    expect(existsSync(out)).toBe(false)
  })

  test.each([
    ['first', '1'],
    ['last', '5'],
  ] as const)('--on-duplicate %s keeps the %s value', async (policy, expected) => {
    const { out, summary } = await build([a, b], { onDuplicate: policy, replication: 3 })
    expect(summary.duplicates).toBe(2)
    const r = await openStore(join(out, 'node-0'))
    expect(r.get('x')?.toString()).toBe(expected)
    expect(r.metadata.records).toBe(3)
    r.close()
  })
})

test('empty input gives a valid empty store on every node', async () => {
  const input = path('empty.tsv')
  writeFileSync(input, '')
  const { out } = await build(input)
  for (const n of cluster.nodes) {
    const report = await verifyStore(join(out, `node-${n.id}`))
    expect(report.records).toBe(0)
  }
})

test('a directory input means every file in it', async () => {
  const dir = path('dir')
  mkdirSync(dir)
  await writeInput(join(dir, 'a.tsv'), 'tsv', [['a', '1']])
  await writeInput(join(dir, 'b.tsv'), 'tsv', [['b', '2']])
  const { summary } = await build(dir)
  expect(summary.inputRecords).toBe(2)
})

describe('bad input fails with file, line and reason, and writes nothing', () => {
  test.each([
    ['tsv', 'ok\t1\nno tab here\n', /:2: .*tab/],
    ['csv', 'key,value\na,1\nb,"unterminated\n', /:3: .*quote/i],
    ['jsonl', '{"key":"a","value":1}\n{"key": nope}\n', /:2: .*JSON/i],
    ['jsonl', '{"key":"a","value":1}\n{"value":2}\n', /:2: .*key/],
    ['tsv', Buffer.concat([Buffer.from('a\t1\nb\t'), Buffer.from([0xff, 0xfe]), Buffer.from('\n')]), /:2: .*UTF-8/],
  ] as const)('%s: %j', async (format, content, message) => {
    const input = path(`bad.${format}`)
    writeFileSync(input, content)
    const out = path('bad-out')
    await expectErrorCode(buildStore({ inputs: [input], format, cluster, store: 'st', output: out, version: 1 }), 'RO_BAD_INPUT', message)
    expect(existsSync(out)).toBe(false)
    expect(readdirSync(tmp.dir).filter((n) => n.includes('rostore-tmp'))).toEqual([])
  })

  test('a missing input file is named', async () => {
    await expectErrorCode(build(path('nope.tsv')), 'RO_BAD_INPUT', /nope\.tsv/)
  })
})

test('an existing output directory is refused, not overwritten', async () => {
  const input = path('in.tsv')
  await writeInput(input, 'tsv', records(10))
  const { out } = await build(input)
  await expectErrorCode(
    buildStore({ inputs: [input], format: 'tsv', cluster, store: 'st', output: out }),
    'RO_BAD_OPTION',
    /already exists/,
  )
})
