import { spawnSync } from 'node:child_process'
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import { presignBuild } from '../../../client/push/presign-build'
import { pushStore, type PushResult } from '../../../client/push/push-store'
import { StoreClient } from '../../../client/store-client'
import { clusterVersions } from '../../../client/versions'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { cliPath } from '../../../common/paths'
import { loadS3Config } from '../../../s3/aws-config'
import { S3Client } from '../../../s3/s3-client'
import { uploadFile } from '../../../s3/upload'
import { CountingProxy } from '../../../testkit/net/counting-proxy'
import { differentChunkFiles } from '../../../testkit/stores/dump-fixtures'
import { duckdb, sqlString } from '../../../testkit/stores/duckdb'
import { startCluster, type TestCluster } from '../../../testkit/cluster/node-process'
import { S3TestServer } from '../../../testkit/peers/s3-server'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * Object storage end to end, against a real S3 server process checking signatures: inputs
 * written by DuckDB as parts under a prefix (Parquet, CSV, JSON lines) read from s3://,
 * a build written to s3://, pushed from s3:// to a 3-node cluster whose nodes fetch with
 * their own credentials (through a proxy that counts and can cut the bytes), every key
 * read back; refusals that change nothing live; a fetch cut mid-file that the next push
 * finishes by fetching only the rest; a build handed out as presigned URLs (signed with a
 * key no node holds) pushed with its query shown nowhere.
 */
jest.setTimeout(300_000)
const tmp = makeTmp()
const token = 'object-storage-test-token-0123'
const KEYS = 3000
let s3server: S3TestServer
let proxy: CountingProxy
let s3: S3Client
let nodes: TestCluster
let cluster: Cluster
let restoreEnv: () => void

/** Key i maps to "<tag>-i" plus padding: every read says which build it came from. */
const valueOf = (tag: string, i: number, pad = 0): string => `${tag}-${i}${'x'.repeat(pad)}`

/** Uploads every file of `dir` under s3://bucket/prefix/ (names kept), like a Spark job's output. */
async function uploadDir(dir: string, bucket: string, prefix: string): Promise<void> {
  for (const name of await readdir(dir)) await uploadFile(s3, join(dir, name), { bucket, key: `${prefix}${name}` })
}

/** DuckDB writes `parts` files of the keys [0, KEYS) in `format` under a local dir, plus _SUCCESS and a hidden file. */
async function writeParts(format: 'parquet' | 'csv' | 'json', tag: string, parts: number, success = true): Promise<string> {
  const dir = join(tmp.fresh(), 'parts')
  await mkdir(dir)
  const per = Math.ceil(KEYS / parts)
  for (let p = 0; p < parts; p++) {
    const query = `SELECT 'key-' || i AS key, ${sqlString(`${tag}-`)} || i AS value FROM range(${p * per}, ${Math.min(KEYS, (p + 1) * per)}) t(i)`
    const ext = format === 'json' ? 'json' : format
    const opts = format === 'parquet' ? 'FORMAT parquet, ROW_GROUP_SIZE 400' : format === 'csv' ? 'FORMAT csv, HEADER true' : 'FORMAT json'
    await duckdb(`COPY (${query}) TO ${sqlString(join(dir, `part-${String(p).padStart(5, '0')}.${ext}`))} (${opts})`)
  }
  if (success) await writeFile(join(dir, '_SUCCESS'), '')
  await writeFile(join(dir, '.part-00000.crc'), 'not data')
  return dir
}

async function readAll(tag: string, pad = 0): Promise<void> {
  const client = await StoreClient.connect({ cluster, store: 'objs', timeoutMs: 5000 })
  try {
    const keys = Array.from({ length: KEYS }, (_, i) => `key-${i}`)
    const values = await client.getMany(keys)
    values.forEach((v, i) => expect(v?.toString()).toBe(valueOf(tag, i, pad)))
  } finally {
    client.close()
  }
}

async function live(): Promise<(number | null)[]> {
  return (await clusterVersions(cluster, 'objs', token)).map((n) => n.live)
}

async function push(from: string): Promise<PushResult> {
  return pushStore({ cluster, store: 'objs', from, adminToken: token, pollMs: 50 })
}

beforeAll(async () => {
  s3server = await S3TestServer.start({ buckets: ['data', 'builds'], extraKeyPairs: 1, logRequests: true })
  proxy = await CountingProxy.start(s3server.port, /\.data(\?|$)/)
  restoreEnv = s3server.apply()
  s3 = s3server.client()
  // The nodes have credentials of their own (here the same key pair) and reach S3 through the proxy.
  nodes = await startCluster({
    dir: tmp.dir,
    nodes: 3,
    partitionsPerNode: 2,
    token,
    env: { ...s3server.env, AWS_ENDPOINT_URL_S3: proxy.endpoint },
  })
  cluster = await loadCluster(nodes.clusterFile)
})

afterAll(async () => {
  restoreEnv?.()
  s3?.close()
  await nodes?.killAll()
  await proxy?.close()
  await s3server?.stop()
  tmp.cleanup()
})

test('build from Parquet parts under an s3:// prefix to an s3:// output, push from s3:// to 3 nodes, every key reads back', async () => {
  await uploadDir(await writeParts('parquet', 'pq', 3), 'data', 'spark/pq/')
  const summary = await buildStore({
    inputs: ['s3://data/spark/pq/'],
    format: 'parquet',
    cluster,
    store: 'objs',
    output: 's3://builds/objs/v1/',
    version: 1,
    replication: 2,
    workers: 2,
    requireSuccess: true,
  })
  expect(summary.inputRecords).toBe(KEYS)
  expect(summary.output).toBe('s3://builds/objs/v1/')
  expect(summary.upload?.files).toBeGreaterThan(3)
  const keys: string[] = []
  for await (const o of s3.list('builds', 'objs/v1/')) keys.push(o.key)
  // Format 2: one version manifest at the root, each partition's files once.
  expect(keys.filter((k) => k.endsWith('/metadata.json'))).toEqual(['objs/v1/metadata.json'])
  const r = await push('s3://builds/objs/v1/')
  expect(r.status).toBe('live')
  expect(await live()).toEqual([1, 1, 1])
  await readAll('pq')
})

test('CSV and JSON lines parts under a prefix build the same store as the same parts on local disk', async () => {
  for (const [format, ext] of [
    ['csv', 'csv'],
    ['jsonl', 'json'],
  ] as const) {
    const dir = await writeParts(ext, format, 4)
    await uploadDir(dir, 'data', `spark/${format}/`)
    const common = { format, cluster, store: 'objs', version: 7, replication: 2, workers: 2, chunks: 2 } as const
    const fromS3 = join(tmp.fresh(), 'out')
    const fromDisk = join(tmp.fresh(), 'out')
    const a = await buildStore({ ...common, inputs: [`s3://data/spark/${format}/`], output: fromS3, requireSuccess: true })
    const b = await buildStore({ ...common, inputs: [dir], output: fromDisk, requireSuccess: true })
    expect(a.inputRecords).toBe(KEYS)
    expect(b.inputRecords).toBe(KEYS)
    expect(await differentChunkFiles(fromS3, fromDisk)).toEqual([])
  }
})

test('--require-success refuses a prefix without _SUCCESS; bad credentials and a missing bucket are clear errors', async () => {
  await uploadDir(await writeParts('parquet', 'unfinished', 2, false), 'data', 'spark/unfinished/')
  const base = { format: 'parquet', cluster, store: 'objs', version: 9, workers: 1 } as const
  const out = () => join(tmp.fresh(), 'out')
  await expect(buildStore({ ...base, inputs: ['s3://data/spark/unfinished/'], output: out(), requireSuccess: true })).rejects.toMatchObject(
    {
      code: 'RO_BAD_INPUT',
      message: expect.stringMatching(/s3:\/\/data\/spark\/unfinished\/: no _SUCCESS marker/),
    },
  )
  // Without the option the same parts build (the job's marker is the user's business then).
  expect((await buildStore({ ...base, inputs: ['s3://data/spark/unfinished/'], output: out() })).inputRecords).toBe(KEYS)
  await expect(buildStore({ ...base, inputs: ['s3://nobucket/x/'], output: out() })).rejects.toMatchObject({
    code: 'RO_BAD_INPUT',
    message: expect.stringMatching(/NoSuchBucket/),
  })
  const restore = s3server.apply({ AWS_SECRET_ACCESS_KEY: 'not-the-secret' })
  try {
    const err = (await buildStore({ ...base, inputs: ['s3://data/spark/pq/'], output: out() }).catch((e: unknown) => e)) as Error
    expect(err).toMatchObject({ code: 'RO_BAD_INPUT', message: expect.stringMatching(/SignatureDoesNotMatch.*wrong secret key/) })
    expect(err.message).not.toContain('not-the-secret')
    await expect(buildStore({ ...base, inputs: [join(tmp.dir, 'nothing')], output: 's3://builds/objs/never/' })).rejects.toMatchObject({
      message: expect.stringMatching(/SignatureDoesNotMatch/),
    })
  } finally {
    restore()
  }
})

test('a missing bucket, a missing manifest, a half-uploaded build and a wrong key each fail the push and change nothing live', async () => {
  // A half-uploaded build: every store file, no manifest (an upload cut before its last step).
  const local = join(tmp.fresh(), 'out')
  await buildStore({
    inputs: ['s3://data/spark/pq/'],
    format: 'parquet',
    cluster,
    store: 'objs',
    output: local,
    version: 2,
    replication: 2,
    workers: 1,
    // Uploaded node directory by node below: a format-1 build.
    layout: 'nodes',
  })
  for (const node of await readdir(local)) {
    for (const f of (await readdir(join(local, node))).filter((n) => n !== 'metadata.json'))
      await uploadFile(s3, join(local, node, f), { bucket: 'builds', key: `objs/half/${node}/${f}` })
  }
  for (const [from, pattern] of [
    ['s3://nobucket/objs/v1/', /NoSuchBucket/],
    ['s3://builds/objs/none/', /NoSuchKey|not found/],
    ['s3://builds/objs/half/', /node-\d+\/metadata\.json.*(NoSuchKey|not found)/],
  ] as const) {
    await expect(push(from)).rejects.toMatchObject({ message: expect.stringMatching(pattern) })
    expect(await live()).toEqual([1, 1, 1])
  }
  const restore = s3server.apply({ AWS_ACCESS_KEY_ID: 'AKIAUNKNOWN' })
  try {
    await expect(push('s3://builds/objs/v1/')).rejects.toMatchObject({ message: expect.stringMatching(/InvalidAccessKeyId/) })
  } finally {
    restore()
  }
  expect(await live()).toEqual([1, 1, 1])
  await readAll('pq')
})

test('a fetch cut mid-file fails the push; the next push of the same build fetches only the bytes not yet verified', async () => {
  // Values padded so that data files hold several 8 MiB ranges.
  const pad = 7000
  const dir = join(tmp.fresh(), 'parts')
  await mkdir(dir)
  await duckdb(
    `COPY (SELECT 'key-' || i AS key, 'big-' || i || repeat('x', ${pad}) AS value FROM range(0, ${KEYS}) t(i)) TO ${sqlString(join(dir, 'part-0.parquet'))} (FORMAT parquet)`,
  )
  await uploadDir(dir, 'data', 'spark/big/')
  await buildStore({
    inputs: ['s3://data/spark/big/'],
    format: 'parquet',
    cluster,
    store: 'objs',
    output: 's3://builds/objs/v3/',
    version: 3,
    replication: 2,
    workers: 2,
    chunks: 1,
    // Bytes are counted per node directory below: a format-1 build.
    layout: 'nodes',
  })
  const sizes = new Map<number, number>()
  for await (const o of s3.list('builds', 'objs/v3/')) {
    const m = /node-(\d+)\/\d+\.data$/.exec(o.key)
    if (m) sizes.set(Number(m[1]), (sizes.get(Number(m[1])) ?? 0) + o.size)
  }
  const total = [...sizes.values()].reduce((a, b) => a + b, 0)
  expect(Math.min(...sizes.values())).toBeGreaterThan(8 << 20)

  proxy.reset()
  proxy.cutAfterBytes(Math.floor(total / 3))
  const failed = await push('s3://builds/objs/v3/').catch((err: Error) => err)
  expect(failed instanceof Error ? 'failed' : failed.status).toBe('failed')
  expect(proxy.cuts).toBeGreaterThan(0)
  expect(await live()).toEqual([1, 1, 1])
  await readAll('pq')

  // What each node kept: verified files and partial ones, in the store's .resume-fetch.
  let kept = 0
  let expected = 0
  const held = new Map((await clusterVersions(cluster, 'objs', token)).map((n) => [n.nodeId, n.versions.some((v) => v.version === 3)]))
  for (const [id, size] of sizes) {
    if (held.get(id) === true) continue
    const resume = join(tmp.dir, `data-${id}`, 'objs', '.resume-fetch')
    let mine = 0
    for (const f of await readdir(resume).catch(() => [] as string[]))
      if (/\.data(\.part)?$/.test(f)) mine += (await stat(join(resume, f))).size
    kept += mine
    expected += size - mine
  }
  expect(kept).toBeGreaterThan(0)

  proxy.reset()
  const r = await push('s3://builds/objs/v3/')
  expect(r.status).toBe('live')
  expect(proxy.bytes).toBe(expected)
  expect(proxy.bytes).toBeLessThan(total)
  expect(await live()).toEqual([3, 3, 3])
  await readAll('big', pad)
  for (const id of sizes.keys()) {
    await expect(stat(join(tmp.dir, `data-${id}`, 'objs', '.resume-fetch'))).rejects.toMatchObject({ code: 'ENOENT' })
  }
})

test('presigned URLs as the source: nodes fetch through an index of one URL per file, signed with a key they do not hold; the query shows nowhere', async () => {
  await buildStore({
    inputs: ['s3://data/spark/pq/'],
    format: 'parquet',
    cluster,
    store: 'objs',
    output: 's3://builds/objs/v4/',
    version: 4,
    replication: 2,
    workers: 1,
  })
  // The publisher's key: neither the nodes nor this process sign with it.
  const publisher = new S3Client(loadS3Config(s3server.envFor(s3server.extraKeys[0]!)))
  const from = 's3://builds/objs/v4/'
  const p = await presignBuild({ from, expiresSeconds: 600, s3: publisher }).finally(() => publisher.close())
  expect(p.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/builds\/objs\/v4\/build\.urls\.json\?.*X-Amz-Signature=/)
  expect(p.files).toBeGreaterThan(6)
  const signature = new URL(p.url).searchParams.get('X-Amz-Signature')!
  const redacted = `${p.url.slice(0, p.url.indexOf('?'))}?[redacted]`

  // A presigned URL signs one object: the index's query does not open a build root.
  const root = `${p.url.slice(0, p.url.indexOf('build.urls.json'))}?${new URL(p.url).searchParams.toString()}`
  await expect(push(root)).rejects.toMatchObject({ message: expect.stringMatching(/HTTP 403/) })
  // A forged signature: refused by S3, the error shows the URL with its query redacted.
  const forged = await push(p.url.replace(signature, '0'.repeat(signature.length))).catch((err: Error) => err)
  expect(forged).toBeInstanceOf(Error)
  expect((forged as Error).message).toMatch(/HTTP 403/)
  expect((forged as Error).message).toContain('?[redacted]')
  expect((forged as Error).message).not.toContain('X-Amz-')
  expect(await live()).toEqual([3, 3, 3])

  const before = (await s3server.requests()).length
  const r = await push(p.url)
  expect(r.status).toBe('live')
  expect(await live()).toEqual([4, 4, 4])
  await readAll('pq')
  // Every read of the build went through a presigned URL of the publisher's key, none through the nodes' own.
  const reads = (await s3server.requests()).slice(before).filter((q) => q.path.startsWith('/builds/objs/v4/'))
  expect(reads.filter((q) => /\.data$/.test(q.path) && q.status < 300).length).toBeGreaterThan(0)
  expect(reads.every((q) => q.keyId === s3server.extraKeys[0]!.accessKeyId)).toBe(true)

  for (const node of nodes.nodes) {
    const get = (path: string) => node.request(path, { headers: { authorization: `Bearer ${token}` } })
    for (const path of ['/admin/push-records', '/status', '/metrics', '/admin/jobs']) {
      const body = (await get(path)).body.toString()
      expect(body).not.toContain(signature)
      expect(body).not.toContain('X-Amz-')
    }
    const record = JSON.parse(await readFile(join(tmp.dir, `data-${node.opts.nodeId}`, 'objs', 'PUSH'), 'utf8')) as { source: string }
    expect(record.source).toBe(redacted)
    expect(node.lines.join('\n')).not.toContain(signature)
    expect(node.lines.join('\n')).not.toContain('X-Amz-')
  }
})

test('rostore presign prints the index URL on stdout only; refuses a prefix without a build and a lifetime over a week', () => {
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [cliPath(), 'presign', ...args], { encoding: 'utf8', env: { PATH: process.env['PATH'], ...s3server.env } })
  const ok = run('s3://builds/objs/v1/', '--expires-in', '60')
  expect(ok.status).toBe(0)
  expect(ok.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/builds\/objs\/v1\/build\.urls\.json\?\S*X-Amz-Expires=60\S*\n$/)
  expect(ok.stderr).toMatch(/^\d+ files presigned for 60 s; index s3:\/\/builds\/objs\/v1\/build\.urls\.json$/m)
  expect(ok.stderr).not.toContain('X-Amz-')
  const none = run('s3://builds/objs/nothing/')
  expect(none.status).toBe(1)
  expect(none.stderr).toMatch(/no build here .*\[RO_NOT_FOUND\]/)
  expect(run('s3://builds/objs/v1/', '--expires-in', '999999').stderr).toMatch(/1 s to 7 days.*\[RO_BAD_OPTION\]/)
})

test("a node whose own S3 credentials are wrong fails the push with S3's reason, its secret nowhere; nothing changes live", async () => {
  await buildStore({
    inputs: ['s3://data/spark/pq/'],
    format: 'parquet',
    cluster,
    store: 'objs',
    output: 's3://builds/objs/v5/',
    version: 5,
    replication: 2,
    workers: 1,
  })
  const nodeEnv = { ...s3server.env, AWS_ENDPOINT_URL_S3: proxy.endpoint }
  const wrong = 'node-2-wrong-secret-4b1d'
  nodes.nodes[2] = await nodes.nodes[2]!.restart({ env: { ...nodeEnv, AWS_SECRET_ACCESS_KEY: wrong } })
  try {
    const r = await push('s3://builds/objs/v5/')
    expect(r.status).toBe('failed')
    // Node 2's fetch failed on S3's refusal (the others were cancelled with it).
    expect(r.nodes.find((n) => n.nodeId === 2)?.error).toMatch(/s3:\/\/builds\/objs\/v5\/.*SignatureDoesNotMatch/)
    expect(r.nodes.filter((n) => /SignatureDoesNotMatch/.test(n.error ?? '')).map((n) => n.nodeId)).toEqual([2])
    expect(JSON.stringify(r)).not.toContain(wrong)
    expect(await live()).toEqual([4, 4, 4])
    expect(nodes.nodes[2]!.lines.join('\n')).not.toContain(wrong)
  } finally {
    nodes.nodes[2] = await nodes.nodes[2]!.restart({ env: nodeEnv })
  }
  // The same push with the node's right credentials goes through.
  expect((await push('s3://builds/objs/v5/')).status).toBe('live')
  expect(await live()).toEqual([5, 5, 5])
  await readAll('pq')
})
