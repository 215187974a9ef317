import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { buildStore } from '../../builder/engines/local/build-job'
import { pushStore } from '../../client/push'
import { loadCluster, type Cluster } from '../../cluster/cluster'
import { writeInput } from '../../testkit/input-files'
import { Nginx } from '../../testkit/nginx'
import { startCluster, type TestCluster } from '../../testkit/node-process'
import { makeTmp } from '../../testkit/tmp'

/**
 * Credentials in a push's source URL (a user name and password) are never stored, logged
 * or returned by the nodes: the push record every node keeps (its PUSH file, the
 * `push-record` log event, GET /admin/push-records) holds the source without them, and so
 * do /status, /metrics, the jobs and the node logs. Before the fix the password was in
 * every node's PUSH file, log and /admin/push-records.
 */
jest.setTimeout(120_000)
const tmp = makeTmp()
const token = 'credentials-test-token-0123456789'
const PASSWORD = 'hunter2-pw-7f3a'
let nodes: TestCluster
let cluster: Cluster
let nginx: Nginx

beforeAll(async () => {
  nodes = await startCluster({ dir: tmp.dir, nodes: 3, partitionsPerNode: 2, token })
  cluster = await loadCluster(nodes.clusterFile)
  const input = join(tmp.dir, 'in.tsv')
  await writeInput(input, 'tsv', Array.from({ length: 300 }, (_, i) => [`k${i}`, `v${i}`] as [string, string]))
  await buildStore({ inputs: [input], format: 'tsv', cluster, store: 'creds', output: join(tmp.dir, 'www', 'v1'), version: 1, replication: 2, workers: 1 })
  nginx = await Nginx.launch({ root: join(tmp.dir, 'www') })
})

afterAll(async () => {
  await nodes?.killAll()
  await nginx?.dispose()
  tmp.cleanup()
})

test('a push from http://user:password@host/... keeps the password nowhere on the nodes', async () => {
  const url = new URL('v1', nginx.url)
  url.username = 'alice'
  url.password = PASSWORD
  const from = url.toString()
  const r = await pushStore({ cluster, store: 'creds', from, adminToken: token })
  expect(r.status).toBe('live')
  const redacted = `http://[redacted]@${url.host}/v1`
  for (const node of nodes.nodes) {
    const id = node.opts.nodeId
    const record = await readFile(join(tmp.dir, `data-${id}`, 'creds', 'PUSH'), 'utf8')
    expect(record).not.toContain(PASSWORD)
    expect(JSON.parse(record)).toMatchObject({ version: 1, source: redacted })
    const get = (path: string) => node.request(path, { headers: { authorization: `Bearer ${token}` } })
    const records = (await get('/admin/push-records')).body.toString()
    expect(records).toContain(JSON.stringify(redacted))
    for (const path of ['/admin/push-records', '/status', '/metrics', '/admin/jobs']) {
      const res = await get(path)
      expect(res.status).toBe(200)
      expect(res.body.toString()).not.toContain(PASSWORD)
    }
    await node.waitForEvent((e) => e['event'] === 'push-record')
    expect(node.lines.join('\n')).not.toContain(PASSWORD)
    expect(node.lines.join('\n')).not.toContain('alice')
  }
})
