import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import type { BuildOptions } from '../../../builder/build-options'
import { parseCluster } from '../../../cluster/cluster'
import { validateManifest } from '../../../formats/store/layout/manifest-io'
import type { S3Client } from '../../../s3/s3-client'
import { fileTree } from '../../../testkit/stores/file-tree'
import { writeInput } from '../../../testkit/stores/input-files'
import { S3TestServer } from '../../../testkit/peers/s3-server'
import { makeTmp } from '../../../testkit/stores/tmp'

// A format-2 build to an s3:// output, against a real S3 server process checking signatures.
const tmp = makeTmp('rostore-partitions-s3-')
let server: S3TestServer
let s3: S3Client
let restoreEnv: () => void
beforeAll(async () => {
  server = await S3TestServer.start({ buckets: ['builds'], logRequests: true })
  restoreEnv = server.apply()
  s3 = server.client()
})
afterAll(async () => {
  restoreEnv?.()
  s3?.close()
  await server?.stop()
  tmp.cleanup()
})

async function getObject(key: string): Promise<Buffer> {
  const r = await s3.get({ bucket: 'builds', key })
  const parts: Buffer[] = []
  for await (const b of r.stream) parts.push(b as Buffer)
  return Buffer.concat(parts)
}

test('--layout partitions to s3://: the objects are the local build files, the manifest uploaded last', async () => {
  const input = join(tmp.dir, 'in.tsv')
  await writeInput(
    input,
    'tsv',
    Array.from({ length: 800 }, (_, i) => [`k${i}`, `v${i}`]),
  )
  const o: BuildOptions = {
    inputs: [input],
    format: 'tsv',
    cluster: parseCluster({
      name: 'c',
      nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', port: 7100 + id, partitions: [id, id + 3] })),
    }),
    store: 'st',
    output: join(tmp.dir, 'local'),
    version: 4,
    replication: 2,
    layout: 'partitions',
    chunks: 2,
    workers: 1,
    tmpdir: tmp.dir,
  }
  await buildStore(o)
  const summary = await buildStore({ ...o, output: 's3://builds/p2/' })
  expect(summary.output).toBe('s3://builds/p2/')
  const local = fileTree(o.output)
  const keys: string[] = []
  for await (const obj of s3.list('builds', 'p2/')) keys.push(obj.key)
  expect(keys.map((k) => k.slice('p2/'.length)).sort()).toEqual([...local.keys()].sort())
  for (const [name, bytes] of local) expect((await getObject(`p2/${name}`)).equals(bytes)).toBe(true)
  validateManifest(JSON.parse((await getObject('p2/metadata.json')).toString('utf8')), 's3://builds/p2/metadata.json')
  const puts = (await server.requests()).filter((r) => r.method === 'PUT' && r.status === 200)
  expect(puts.length).toBe(local.size)
  expect(puts[puts.length - 1]!.path).toMatch(/\/p2\/metadata\.json$/)
})

test('--base s3://...: the base is downloaded and checked, and the build equals one against the same base on disk', async () => {
  const cluster = parseCluster({
    name: 'c',
    nodes: [0, 1].map((id) => ({ id, host: '127.0.0.1', port: 7300 + id, partitions: [id, id + 2] })),
  })
  const recs = (tag: string, n: number): [string, string][] =>
    Array.from({ length: n }, (_, i) => [`k${i}`, i % 40 === 0 ? `${tag}-${i}` : `value-${i}-${'x'.repeat(i % 90)}`])
  const in1 = join(tmp.dir, 'base-in1.tsv')
  const in2 = join(tmp.dir, 'base-in2.tsv')
  await writeInput(in1, 'tsv', recs('v1', 3000))
  await writeInput(in2, 'tsv', recs('v2', 3000))
  const o = (inputs: string[], version: number, output: string, base?: string): BuildOptions => ({
    inputs,
    format: 'tsv',
    cluster,
    store: 'st',
    output,
    version,
    replication: 2,
    chunks: 2,
    workers: 1,
    tmpdir: tmp.dir,
    ...(base === undefined ? {} : { base }),
  })
  const localBase = join(tmp.dir, 'base-v1')
  await buildStore(o([in1], 1, localBase))
  await buildStore(o([in1], 1, 's3://builds/base-v1/'))
  const fromLocal = join(tmp.dir, 'v2-local-base')
  const fromS3 = join(tmp.dir, 'v2-s3-base')
  const a = await buildStore(o([in2], 2, fromLocal, localBase))
  const b = await buildStore(o([in2], 2, fromS3, 's3://builds/base-v1/'))
  expect(b.patches?.partitions).toBeGreaterThan(0)
  expect({ ...b.patches, seconds: 0 }).toEqual({ ...a.patches, seconds: 0 })
  expect(fileTree(fromS3)).toEqual(fileTree(fromLocal))
  // Nothing of the download is left under --tmpdir.
  expect(readdirSync(tmp.dir).filter((n) => n.startsWith('rostore-base-'))).toEqual([])

  // A damaged object is refused by its checksum; a missing one says the base is not whole.
  await s3.put({ bucket: 'builds', key: 'base-v1/p0-c1.data' }, Buffer.concat([await getObject('base-v1/p0-c1.data'), Buffer.from('x')]))
  await expect(buildStore(o([in2], 2, join(tmp.dir, 'v2-bad'), 's3://builds/base-v1/'))).rejects.toMatchObject({
    code: 'RO_CHECKSUM_MISMATCH',
    message: expect.stringContaining('p0-c1.data'),
  })
  await s3.delete({ bucket: 'builds', key: 'base-v1/p0-c1.data' })
  await expect(buildStore(o([in2], 2, join(tmp.dir, 'v2-gone'), 's3://builds/base-v1/'))).rejects.toMatchObject({
    code: 'RO_BAD_OPTION',
    message: expect.stringMatching(/p0-c1\.data is missing/),
  })
  await expect(buildStore(o([in2], 2, join(tmp.dir, 'v2-none'), 's3://builds/no-such-build/'))).rejects.toMatchObject({
    code: 'RO_BAD_OPTION',
  })
  for (const x of ['v2-bad', 'v2-gone', 'v2-none']) expect(existsSync(join(tmp.dir, x))).toBe(false)
  expect(readdirSync(tmp.dir).filter((n) => n.startsWith('rostore-base-'))).toEqual([])
})
