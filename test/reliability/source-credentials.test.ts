import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { buildStore } from '../../builder/engines/local/build-job'
import { pushStore } from '../../client/push/push-store'
import { clusterVersions } from '../../client/versions'
import { loadCluster, type Cluster } from '../../cluster/cluster'
import { writeInput } from '../../testkit/stores/input-files'
import { Nginx } from '../../testkit/peers/nginx'
import { startCluster, type TestCluster } from '../../testkit/cluster/node-process'
import { makeTmp } from '../../testkit/stores/tmp'

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
const LINK_SECRET = 'link-secret-0b9e'

/** A token URL for everything under /signed/, valid for an hour. */
function tokenQuery(secret = LINK_SECRET): string {
  const expires = Math.floor(Date.now() / 1000) + 3600
  const md5 = createHash('md5').update(`${expires} ${secret}`).digest('base64url')
  return `md5=${md5}&expires=${expires}`
}
let nodes: TestCluster
let cluster: Cluster
let nginx: Nginx

beforeAll(async () => {
  nodes = await startCluster({ dir: tmp.dir, nodes: 3, partitionsPerNode: 2, token })
  cluster = await loadCluster(nodes.clusterFile)
  const input = join(tmp.dir, 'in.tsv')
  await writeInput(
    input,
    'tsv',
    Array.from({ length: 300 }, (_, i) => [`k${i}`, `v${i}`] as [string, string]),
  )
  await buildStore({
    inputs: [input],
    format: 'tsv',
    cluster,
    store: 'creds',
    output: join(tmp.dir, 'www', 'v1'),
    version: 1,
    replication: 2,
    workers: 1,
  })
  await buildStore({
    inputs: [input],
    format: 'tsv',
    cluster,
    store: 'creds',
    output: join(tmp.dir, 'www', 'v2'),
    version: 2,
    replication: 2,
    workers: 1,
  })
  // A token in the query grants everything under /signed/ until it expires (nginx's
  // secure_link checks it): the shape of an Azure SAS or a CDN token URL.
  nginx = await Nginx.launch({
    root: join(tmp.dir, 'www'),
    serverConfig: `location /signed/ {
      secure_link $arg_md5,$arg_expires;
      secure_link_md5 "$secure_link_expires ${LINK_SECRET}";
      if ($secure_link = "") { return 403; }
      if ($secure_link = "0") { return 410; }
      alias ${join(tmp.dir, 'www')}/;
    }`,
  })
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

test('a source whose query carries a token works, and the query appears in no record, log, error, /status or /metrics', async () => {
  const query = tokenQuery()
  const secretPart = query.slice(0, 20)
  // Without the token, the server refuses: the query is what grants access.
  await expect(
    pushStore({ cluster, store: 'creds', from: new URL('signed/v2', nginx.url).toString(), adminToken: token }),
  ).rejects.toMatchObject({ message: expect.stringMatching(/HTTP 403/) })
  const wrong = `${new URL('signed/v2', nginx.url).toString()}?${tokenQuery('not-the-secret')}`
  const refused = await pushStore({ cluster, store: 'creds', from: wrong, adminToken: token }).catch((err: Error) => err)
  expect(refused).toBeInstanceOf(Error)
  expect((refused as Error).message).toContain('?[redacted]')
  expect((refused as Error).message).not.toContain(wrong.split('?')[1]!.slice(0, 20))
  const from = `${new URL('signed/v2', nginx.url).toString()}?${query}`
  const r = await pushStore({ cluster, store: 'creds', from, adminToken: token })
  expect(r.status).toBe('live')
  expect((await clusterVersionsOf()).every((v) => v === 2)).toBe(true)
  // A fetch that fails on a node (the same build, a wrong token): its job error is redacted too.
  const failedJob = await nodes.nodes[0]!.admin('POST', '/stores/creds/fetch', {
    source: `${new URL('signed/v1', nginx.url).toString()}?${tokenQuery('x')}`,
  })
  expect(failedJob.status).toBe(202)
  const job = await nodes.nodes[0]!.waitJob((JSON.parse(failedJob.body.toString()) as { id: string }).id)
  expect(job['state']).toBe('failed')
  expect(JSON.stringify(job)).toContain('?[redacted]')
  for (const node of nodes.nodes) {
    const get = (path: string) => node.request(path, { headers: { authorization: `Bearer ${token}` } })
    for (const path of ['/admin/push-records', '/status', '/metrics', '/admin/jobs']) {
      const res = await get(path)
      expect(res.status).toBe(200)
      expect(res.body.toString()).not.toContain(secretPart)
      expect(res.body.toString()).not.toContain('md5=')
    }
    const record = JSON.parse(await readFile(join(tmp.dir, `data-${node.opts.nodeId}`, 'creds', 'PUSH'), 'utf8')) as { source: string }
    expect(record.source).toBe(`${new URL('signed/v2', nginx.url).toString()}?[redacted]`)
    expect(node.lines.join('\n')).not.toContain(secretPart)
    expect(node.lines.join('\n')).not.toContain('md5=')
  }
})

async function clusterVersionsOf(): Promise<(number | null)[]> {
  return (await clusterVersions(cluster, 'creds', token)).map((n) => n.live)
}
