import { spawn } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync, mkdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../../../builder/engines/local/build-job'
import type { BuildOptions } from '../../../../../builder/build-options'
import { buildOnRay } from '../../../../../builder/engines/ray/ray-build'
import { parseCluster } from '../../../../../cluster/cluster'
import { cliPath } from '../../../../../common/paths'
import type { S3Client } from '../../../../../s3/s3-client'
import { uploadFile } from '../../../../../s3/upload'
import { duckdb, sqlString } from '../../../../../testkit/stores/duckdb'
import { expectSameTree, fileTree } from '../../../../../testkit/stores/file-tree'
import { startRayCluster, type RayCluster } from '../../../../../testkit/peers/ray-cluster'
import { S3TestServer, type S3KeyPair, type S3RequestLine } from '../../../../../testkit/peers/s3-server'
import { makeTmp } from '../../../../../testkit/stores/tmp'

/**
 * The Ray engine over s3:// inputs (and an s3:// output), against the real S3 test server:
 * the driver side lists the prefix and reads Parquet footers or CSV headers only; every
 * map task reads its split from S3 itself with its Ray node's own credentials. Each party
 * signs with a key pair of its own (uploader, local engine, Ray driver, Ray worker node), so
 * the server's request log says who read which bytes of every part.
 */
jest.setTimeout(180_000)
const tmp = makeTmp('rostore-ray-s3-')
const KEYS = 3000
let s3server: S3TestServer
let s3: S3Client
let cluster: RayCluster | undefined
let driverKey: S3KeyPair
let localKey: S3KeyPair
let workerKey: S3KeyPair

const clusterFile = parseCluster({
  name: 'test',
  nodes: [
    { id: 0, host: '127.0.0.1', port: 7100, partitions: [0, 3] },
    { id: 1, host: '127.0.0.1', port: 7101, partitions: [1, 4] },
    { id: 2, host: '127.0.0.1', port: 7102, partitions: [2, 5] },
  ],
})

/** Rows per part: DuckDB's row groups hold at least 2048 rows, so Parquet parts are larger to hold several. */
const ROWS = { parquet: 5000, csv: 1100, jsonl: 1100 } as const

/** DuckDB writes 3 parts (keys repeat across them), then _SUCCESS; all uploaded under s3://data/<prefix>/. */
async function parts(format: 'parquet' | 'csv' | 'jsonl', prefix: string): Promise<string> {
  const dir = join(tmp.dir, prefix)
  mkdirSync(dir)
  const n = ROWS[format]
  for (let p = 0; p < 3; p++) {
    const query = `SELECT 'key-' || (i % ${KEYS}) AS key, 'v${p}-' || i || repeat('y', i % 17) AS value FROM range(${p * n}, ${(p + 1) * n}) t(i)`
    const opts = format === 'parquet' ? 'FORMAT parquet, ROW_GROUP_SIZE 2048' : format === 'csv' ? 'FORMAT csv, HEADER true' : 'FORMAT json'
    await duckdb(`COPY (${query}) TO ${sqlString(join(dir, `part-${p}.${format}`))} (${opts})`)
  }
  writeFileSync(join(dir, '_SUCCESS'), '')
  for (const name of readdirSync(dir)) await uploadFile(s3, join(dir, name), { bucket: 'data', key: `${prefix}/${name}` })
  return dir
}

function options(prefix: string, format: 'parquet' | 'csv' | 'jsonl', output: string): BuildOptions {
  return {
    inputs: [`s3://data/${prefix}/`],
    requireSuccess: true,
    format,
    cluster: clusterFile,
    store: 'st',
    output,
    version: 5,
    replication: 2,
    chunks: 2,
    onDuplicate: 'last',
  }
}

/** Runs `work` with this process's AWS_* set to `key` (the local engine and the Ray engine's Node side read them). */
async function as<T>(key: S3KeyPair, work: () => Promise<T>): Promise<T> {
  const restore = s3server.apply(s3server.envFor(key))
  try {
    return await work()
  } finally {
    restore()
  }
}

/** The requests for one part object since `from`, by who signed them. */
function byKey(log: readonly S3RequestLine[], path: string, key: S3KeyPair): S3RequestLine[] {
  return log.filter((r) => r.path === path && r.keyId === key.accessKeyId)
}

function rangeOf(r: S3RequestLine, size: number): [number, number] {
  const m = /^bytes=(\d+)-(\d*)$/.exec(r.range ?? '')
  if (m === null) return [0, size - 1]
  return [Number(m[1]), m[2] === '' ? size - 1 : Number(m[2])]
}

/** The objects under s3://builds/<prefix> are the files under `dir`, name for name and byte for byte. */
async function expectUploadedTree(prefix: string, dir: string): Promise<void> {
  const uploaded = new Map<string, Buffer>()
  for await (const o of s3.list('builds', prefix)) {
    const chunks: Buffer[] = []
    for await (const c of (await s3.get({ bucket: 'builds', key: o.key })).stream as AsyncIterable<Buffer>) chunks.push(c)
    uploaded.set(o.key.slice(prefix.length), Buffer.concat(chunks))
  }
  const expected = fileTree(dir)
  expect([...uploaded.keys()].sort()).toEqual([...expected.keys()].sort())
  for (const [name, bytes] of expected) expect(uploaded.get(name)?.equals(bytes)).toBe(true)
}

beforeAll(async () => {
  s3server = await S3TestServer.start({ buckets: ['data', 'builds'], extraKeyPairs: 3, logRequests: true })
  ;[driverKey, localKey, workerKey] = s3server.extraKeys as [S3KeyPair, S3KeyPair, S3KeyPair]
  s3 = s3server.client()
  // The Ray node's tasks get the node's environment: credentials of their own.
  cluster = await startRayCluster({ dir: join(tmp.dir, 'ray'), workers: 1, cpusPerWorker: 2, env: s3server.envFor(workerKey) })
}, 240_000)

afterAll(async () => {
  await cluster?.stop()
  s3?.close()
  await s3server?.stop()
  tmp.cleanup()
})

test('Parquet parts under s3://: map tasks read the row groups from S3 themselves; the s3:// output equals the local engine build', async () => {
  const local = await parts('parquet', 'pq')
  const reference = join(tmp.dir, 'pq-local')
  await as(localKey, () => buildStore({ ...options('pq', 'parquet', reference), workers: 2 }))
  const before = (await s3server.requests()).length
  const s = await as(driverKey, () =>
    buildOnRay({
      build: options('pq', 'parquet', 's3://builds/ray-pq/'),
      address: cluster!.address,
      python: cluster!.python,
      reducers: 2,
      splitBytes: 1, // one map task per row group
      onProgress: () => {},
    }),
  )
  expect(s.output).toBe('s3://builds/ray-pq/')
  expect(s.job.records).toBe(3 * ROWS.parquet)
  expect(s.job.mapTasks).toBe(9) // 3 row groups per part
  expect(s.upload?.files).toBe(fileTree(reference).size)

  // The uploaded build is the local engine's, file for file and byte for byte.
  await expectUploadedTree('ray-pq/', reference)

  // Who read what: the driver side only the magic and the footer of each part, the worker node every column chunk.
  const log = (await s3server.requests()).slice(before)
  for (const name of ['part-0.parquet', 'part-1.parquet', 'part-2.parquet']) {
    const file = readFileSync(join(local, name))
    const footerStart = file.length - 8 - file.readUInt32LE(file.length - 8)
    const path = `/data/pq/${name}`
    const driverGets = byKey(log, path, driverKey).filter((r) => r.method === 'GET')
    expect(driverGets.length).toBeGreaterThan(0)
    for (const r of driverGets) {
      const [a, b] = rangeOf(r, file.length)
      expect(b < 4 || a >= footerStart).toBe(true)
    }
    expect(driverGets.reduce((n, r) => n + r.bytes, 0)).toBeLessThan(footerStart)
    const covered = new Uint8Array(file.length)
    for (const r of byKey(log, path, workerKey).filter((r) => r.method === 'GET' && r.status < 300)) {
      const [a, b] = rangeOf(r, file.length)
      covered.fill(1, a, b + 1)
    }
    expect(covered.subarray(4, footerStart).every((c) => c === 1)).toBe(true)
  }
  expect(
    log.filter((r) => r.path.startsWith('/data/pq/part-') && r.keyId !== driverKey.accessKeyId && r.keyId !== workerKey.accessKeyId),
  ).toEqual([])
})

test('CSV parts under s3://: the driver side reads only each header line, the map tasks their byte ranges; byte-identical to the local engine', async () => {
  const local = await parts('csv', 'csv')
  const reference = join(tmp.dir, 'csv-local')
  const output = join(tmp.dir, 'csv-ray')
  await as(localKey, () => buildStore({ ...options('csv', 'csv', reference), workers: 2 }))
  const before = (await s3server.requests()).length
  const s = await as(driverKey, () =>
    buildOnRay({
      build: options('csv', 'csv', output),
      address: cluster!.address,
      python: cluster!.python,
      reducers: 2,
      splitBytes: 12 << 10,
      onProgress: () => {},
    }),
  )
  expectSameTree(reference, output)
  expect(s.job.records).toBe(3 * ROWS.csv)
  expect(s.job.mapTasks).toBeGreaterThan(3)
  const log = (await s3server.requests()).slice(before)
  let total = 0
  for (const name of ['part-0.csv', 'part-1.csv', 'part-2.csv']) {
    const size = statSync(join(local, name)).size
    total += size
    const path = `/data/csv/${name}`
    const driverGets = byKey(log, path, driverKey).filter((r) => r.method === 'GET')
    expect(driverGets.map((r) => rangeOf(r, size)[0])).toEqual([0])
    expect(driverGets[0]!.bytes).toBeLessThanOrEqual(4096)
    expect(size).toBeGreaterThan(4 * 4096)
    const covered = new Uint8Array(size)
    for (const r of byKey(log, path, workerKey).filter((r) => r.method === 'GET' && r.status < 300)) {
      const [a, b] = rangeOf(r, size)
      covered.fill(1, a, b + 1)
    }
    expect(covered.every((c) => c === 1)).toBe(true)
  }
  expect(s.job.inputBytes).toBe(total)
})

test('--require-success: a prefix without _SUCCESS is refused before the job starts, naming the prefix', async () => {
  const dir = join(tmp.dir, 'unfinished')
  mkdirSync(dir)
  await duckdb(
    `COPY (SELECT 'k' || i AS key, 'v' AS value FROM range(0, 10) t(i)) TO ${sqlString(join(dir, 'part-0.csv'))} (FORMAT csv, HEADER true)`,
  )
  await uploadFile(s3, join(dir, 'part-0.csv'), { bucket: 'data', key: 'unfinished/part-0.csv' })
  await expect(
    as(driverKey, () =>
      buildOnRay({
        build: options('unfinished', 'csv', join(dir, 'out')),
        address: cluster!.address,
        python: cluster!.python,
        onProgress: () => {},
      }),
    ),
  ).rejects.toMatchObject({ code: 'RO_BAD_INPUT', message: expect.stringMatching(/s3:\/\/data\/unfinished\/: no _SUCCESS marker/) })
  expect(readdirSync(dir)).toEqual(['part-0.csv'])
})

test('rostore build --engine ray, JSON lines from s3:// to s3://: the work directory is under --tmpdir while the job runs, gone after; the upload equals the local engine build', async () => {
  await parts('jsonl', 'jsonl')
  const reference = join(tmp.dir, 'jsonl-local')
  await as(localKey, () => buildStore({ ...options('jsonl', 'jsonl', reference), version: 6, workers: 2 }))
  const clusterPath = join(tmp.dir, 'cluster.json')
  writeFileSync(clusterPath, JSON.stringify(clusterFile))
  const work = join(tmp.dir, 'shared-tmp')
  mkdirSync(work)
  // What --tmpdir holds while the job runs (looked at on each progress line of the driver).
  const seen = new Set<string>()
  const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((res) => {
    const child = spawn(
      process.execPath,
      [
        cliPath(), 'build', '--engine', 'ray', '--ray-address', cluster!.address, '--ray-python', cluster!.python,
        '--input', 's3://data/jsonl/', '--require-success', '--format', 'jsonl', '--cluster', clusterPath, '--store', 'st',
        '--version', '6', '--replication', '2', '--chunks', '2', '--on-duplicate', 'last', '--reducers', '2', '--tmpdir', work,
        '--output', 's3://builds/ray-cli/',
      ], // prettier-ignore
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...s3server.envFor(driverKey) } },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString()
      for (const name of readdirSync(work)) seen.add(name)
    })
    child.on('close', (status) => res({ status, stdout, stderr }))
  })
  expect(r.stderr).toMatch(/^ray: map 3\/3 tasks/m)
  expect(r.status).toBe(0)
  expect(r.stdout).toMatch(/built store st version 6 in s3:\/\/builds\/ray-cli\/ on Ray/)
  expect([...seen].some((n) => /^\.rostore-s3-output\.ray-[0-9a-f]+$/.test(n))).toBe(true)
  expect(readdirSync(work)).toEqual([])
  await expectUploadedTree('ray-cli/', reference)
})
