import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeInput } from '../../../testkit/stores/input-files'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The build hashes keys (MD5) and checksums records (CRC-32) in batches through the
 * native addon, or through the JavaScript twins when ROSTORE_NATIVE=0: both must write
 * the same bytes. Each build runs in a child process with its own environment (worker
 * threads inherit it), in the configurations that take different paths: spills and
 * merges, replicas, compression, forced hash-prefix ties, columnar input.
 */
const tmp = makeTmp()
afterAll(tmp.cleanup)
const buildJob = join(__dirname, '..', '..', '..', 'builder', 'engines', 'local', 'build-job.js')
const clusterModule = join(__dirname, '..', '..', '..', 'cluster', 'cluster.js')

const cluster = {
  name: 'test',
  nodes: [
    { id: 0, host: '127.0.0.1', port: 7100, partitions: [0, 3] },
    { id: 1, host: '127.0.0.1', port: 7101, partitions: [1, 4] },
    { id: 2, host: '127.0.0.1', port: 7102, partitions: [2, 5] },
  ],
}

function buildInChild(native: '0' | '1', input: string, format: string, output: string, extra: Record<string, unknown>): void {
  const options = { inputs: [input], format, store: 'st', output, version: 3, replication: 2, chunks: 3, workers: 2, ...extra }
  const script = `
    const { buildStore } = require(${JSON.stringify(buildJob)})
    const { parseCluster } = require(${JSON.stringify(clusterModule)})
    const { batchHashes } = require(${JSON.stringify(join(__dirname, '..', '..', '..', 'common', 'batch-hash.js'))})
    buildStore({ ...${JSON.stringify(options)}, cluster: parseCluster(${JSON.stringify(cluster)}) })
      .then(() => process.stdout.write(batchHashes().mode), (err) => { console.error(err); process.exit(1) })`
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, ROSTORE_NATIVE: native } })
  expect(r.stderr).toBe('')
  expect(r.status).toBe(0)
  // The mode the build ran in; the addon is built by npm ci (CI too), so '1' means native.
  expect(r.stdout).toBe(native === '0' ? 'js' : 'native')
}

/** Every file of a build output, by its path under it (format 2 is flat, format 1 has node directories). */
function filesOf(out: string, under = ''): Map<string, Buffer> {
  const m = new Map<string, Buffer>()
  for (const e of readdirSync(join(out, under), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = under === '' ? e.name : `${under}/${e.name}`
    if (e.isDirectory()) for (const [k, v] of filesOf(out, rel)) m.set(k, v)
    else m.set(rel, readFileSync(join(out, rel)))
  }
  return m
}

function records(n: number): [string, string][] {
  // Keys of every MD5 padding case (up to 2 blocks and beyond), values of every CRC path.
  return Array.from({ length: n }, (_, i) => [`${i}-${'k'.repeat(i % 150)}`, i % 17 === 0 ? '' : `${'v'.repeat(i % 300)}${i}`])
}

const cases: [string, string, Record<string, unknown>][] = [
  ['tsv in memory', 'tsv', {}],
  ['tsv spilled to many runs, merged', 'tsv', { memoryMb: 1 }],
  ['tsv, snappy, duplicates kept last', 'tsv', { compression: 'snappy', onDuplicate: 'last' }],
  ['tsv, hash prefixes forced to collide', 'tsv', { keyHash: 'md5-collide-3', memoryMb: 1 }],
  ['jsonl', 'jsonl', {}],
  ['parquet', 'parquet', {}],
]

test.each(cases)('%s: ROSTORE_NATIVE=0 and =1 write the same bytes', async (name, format, extra) => {
  const input = join(tmp.dir, `${name.replace(/\W+/g, '-')}.${format}`)
  const recs = records(4000)
  if (extra['onDuplicate'] === 'last') recs.push(['5-kkkkk', 'again'], ['77-' + 'k'.repeat(77), 'and again'])
  await writeInput(input, format as 'tsv', recs)
  const js = join(tmp.dir, `${name.replace(/\W+/g, '-')}-js`)
  const native = join(tmp.dir, `${name.replace(/\W+/g, '-')}-native`)
  buildInChild('0', input, format, js, extra)
  buildInChild('1', input, format, native, extra)
  const a = filesOf(js)
  const b = filesOf(native)
  expect([...b.keys()]).toEqual([...a.keys()])
  // Format 2: the manifest and every partition's chunk files, index and data.
  const manifest = JSON.parse(a.get('metadata.json')!.toString()) as { partitions: number; chunks: number }
  expect(manifest.chunks).toBe(3)
  expect(a.size).toBe(1 + 2 * manifest.partitions * manifest.chunks)
  for (const [file, bytes] of a) expect(b.get(file)!.equals(bytes)).toBe(true)
})
