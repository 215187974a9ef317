import { execFile } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../../builder/engines/local/build-job'
import { loadCluster } from '../../../../cluster/cluster'
import { StoreClient } from '../../../../client/store-client'
import { packageRoot } from '../../../../common/paths'
import { writeInput } from '../../../../testkit/stores/input-files'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { startCluster, startSingleNode, type NodeProcess, type TestCluster } from '../../../../testkit/cluster/node-process'
import { makeTestCertificates } from '../../../../testkit/net/tls-certs'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * redis-py (Debian's python3-redis, run by the system python3) against real nodes, through
 * the snippets of docs/API.md "Python (redis-py)" exactly as written: reads and MGET with
 * AUTH, a pipeline, refused tokens, TLS, and failover with a node killed. The doc is the
 * script: a snippet changed there is what runs here.
 */
jest.setTimeout(120_000)
const PYTHON = process.env['ROSTORE_SYSTEM_PYTHON'] ?? '/usr/bin/python3'
const tmp = makeTmp('rostore-redis-py-')
const ADMIN = 'redis-py-admin-token-0123456789'
const READ = 'redis-py-read-token-0123456789'
const KEYS = 1000
let nodes: TestCluster | undefined
let tlsNode: NodeProcess | undefined
let caFile = ''

/** The ```python blocks of docs/API.md's "Python (redis-py)" section, in order. */
function docSnippets(): string[] {
  const doc = readFileSync(join(packageRoot(__dirname), 'docs', 'API.md'), 'utf8')
  const start = doc.indexOf('### Python (redis-py)')
  const section = doc.slice(start, doc.indexOf('\n### ', start + 1))
  return [...section.matchAll(/```python\n([\s\S]*?)```/g)].map((m) => m[1] as string)
}
const [READS, PIPELINE, REFUSED, TLS, FAILOVER] = docSnippets()

function python(script: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = join(tmp.fresh(), 'snippet.py')
  writeFileSync(file, script)
  // Only the variables the snippets read, and none of the developer's Python environment.
  const childEnv = { PATH: '/usr/bin:/bin', ...env }
  return new Promise((resolve) => {
    execFile(PYTHON, [file], { env: childEnv, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

const nodeEnv = (n: NodeProcess): Record<string, string> => ({ ROSTORE_HOST: '127.0.0.1', ROSTORE_RESP_PORT: String(n.respPort) })

beforeAll(async () => {
  if (!existsSync(PYTHON)) throw new Error(`no ${PYTHON}`)
  const probe = await python('import redis\nprint(redis.__version__)', {})
  if (probe.code !== 0) throw new Error(`redis-py is missing for ${PYTHON} (apt-get install -y python3-redis): ${probe.stderr}`)
  nodes = await startCluster({
    dir: tmp.dir,
    nodes: 3,
    partitionsPerNode: 3,
    token: ADMIN,
    resp: true,
    env: { ROSTORE_READ_TOKEN: READ },
    extraArgs: ['--workers', '1'],
  })
  const cluster = await loadCluster(nodes.clusterFile)
  const input = join(tmp.dir, 'in.tsv')
  await writeInput(
    input,
    'tsv',
    Array.from({ length: KEYS }, (_, i) => [`key-${i}`, `v1-${i}`] as [string, string]),
  )
  const out = join(tmp.dir, 'out')
  await buildStore({
    inputs: [input],
    format: 'tsv',
    cluster,
    store: 'users',
    output: out,
    version: 1,
    replication: 2,
    chunks: 2,
    workers: 1,
  })
  await Promise.all(nodes.nodes.map((n) => n.install('users', out, { swap: true })))

  const certs = makeTestCertificates(join(tmp.dir, 'pki'))
  caFile = certs.caFile
  const src = join(tmp.dir, 'tls-src')
  await makeNodeDir(src, [['key-1', 'tls-1']], { store: 'users', version: 1, nodeId: 0, chunks: 1 })
  // Installed over plain HTTP, then restarted on the same data with TLS.
  const plain = await startSingleNode({ dir: join(tmp.dir, 'tls'), token: ADMIN, workers: 1 })
  await plain.install('users', src, { swap: true })
  tlsNode = await plain.restart({
    env: { ROSTORE_READ_TOKEN: READ },
    extraArgs: ['--tls-cert', certs.certFile, '--tls-key', certs.keyFile, '--resp-port', '0'],
  })
})

afterAll(async () => {
  if (tlsNode?.running) await tlsNode.kill9()
  await nodes?.killAll()
  tmp.cleanup()
})

test('the doc has the five snippets this test runs', () => {
  expect(docSnippets()).toHaveLength(5)
})

test('reads and MGET with AUTH, through a node that forwards what it does not hold', async () => {
  const r = await python(READS!, { ...nodeEnv(nodes!.nodes[0]!), ROSTORE_READ_TOKEN: READ })
  expect(r.stderr).toBe('')
  expect(r.stdout).toBe("b'v1-1'\nNone\n[b'v1-1', b'v1-2', None]\n")
})

test('a pipeline of 1000 reads', async () => {
  const r = await python(PIPELINE!, { ...nodeEnv(nodes!.nodes[1]!), ROSTORE_READ_TOKEN: READ })
  expect(r.stderr).toBe('')
  expect(r.stdout).toBe("1000 b'v1-0' b'v1-999'\n")
})

test('no token and a wrong token are refused', async () => {
  const r = await python(REFUSED!, nodeEnv(nodes!.nodes[0]!))
  expect(r.stderr).toBe('')
  expect(r.stdout).toBe('refused: Authentication required.\nrefused: WRONGPASS invalid username-password pair or user is disabled.\n')
})

test('TLS, checking the node certificate against the CA', async () => {
  const r = await python(TLS!, { ...nodeEnv(tlsNode!), ROSTORE_READ_TOKEN: READ, ROSTORE_CA_FILE: caFile })
  expect(r.stderr).toBe('')
  expect(r.stdout).toBe("b'tls-1'\n")
  // The same snippet without the CA the certificate chains to: the handshake fails.
  const wrongCa = makeTestCertificates(join(tmp.fresh(), 'other'), 'other').caFile
  const bad = await python(TLS!, { ...nodeEnv(tlsNode!), ROSTORE_READ_TOKEN: READ, ROSTORE_CA_FILE: wrongCa })
  expect(bad.code).not.toBe(0)
  expect(bad.stderr).toMatch(/CERTIFICATE_VERIFY_FAILED|certificate verify failed/)
})

test('failover: with a node killed, the snippet reads every key from the live nodes', async () => {
  const cluster = await loadCluster(nodes!.clusterFile)
  const client = await StoreClient.connect({ cluster, store: 'users', readToken: READ })
  // Keys 0-19 the dead node holds: read through the next node, from their other replica.
  const onDead = Array.from({ length: 20 }, (_, i) => i).filter((i) => client.replicasOf(`key-${i}`).includes(1))
  client.close()
  expect(onDead.length).toBeGreaterThan(0)
  const [n0, n1, n2] = nodes!.nodes
  await n1!.kill9()
  const order = [n1!, n0!, n2!].map((n) => `127.0.0.1:${n.respPort}`).join(',')
  const r = await python(FAILOVER!, { ROSTORE_RESP_NODES: order, ROSTORE_READ_TOKEN: READ })
  expect(r.stderr).toBe('')
  expect(r.stdout).toBe(`[${Array.from({ length: 20 }, (_, i) => `b'v1-${i}'`).join(', ')}]\n`)
})
