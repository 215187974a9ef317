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
