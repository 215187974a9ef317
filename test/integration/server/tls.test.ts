import { spawn } from 'node:child_process'
import { buildVersion, numberedRecords } from '../../../testkit/cluster/build-version'
import { copyFileSync } from 'node:fs'
import https from 'node:https'
import { connect } from 'node:net'
import { join } from 'node:path'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { clusterWithTls } from '../../../client/http'
import { StoreClient } from '../../../client/store-client'
import { cliPath } from '../../../common/paths'
import { startClusterFromFile, writeClusterFile, type TestCluster } from '../../../testkit/cluster/node-process'
import { makeTestCertificates, type TestCertificates } from '../../../testkit/net/tls-certs'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The admin API (and reads) over TLS. Two real nodes serve HTTPS with
 * a certificate from a CA made at test time; the CLI's push, versions, get, rollback and
 * repair reach them with --ca-file (or ROSTORE_CA_FILE), the library with clusterWithTls.
 * Without the CA, or over plain HTTP, nothing gets through, and the errors say why. A
 * SIGHUP swaps the certificate for one of another CA without a restart.
 */

jest.setTimeout(120_000)
const tmp = makeTmp('rostore-tls-')
const TOKEN = 'tls-test-token-0123456789abcdef'
const KEYS = 300
let nodes: TestCluster
let cluster: Cluster
let certs: TestCertificates
let clusterFile: string
const out = (v: number): string => join(tmp.dir, 'builds', `v${v}`)

/** One HTTPS request to a node; rejects on any TLS or connection error. */
function httpsGet(port: number, path: string, opts: https.RequestOptions = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path, agent: false, ...opts }, (res) => {
      let body = ''
      res.on('data', (d: Buffer) => (body += d.toString()))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** Runs the CLI; resolves with its exit code and output. */
function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [cliPath(), ...args], {
    env: { ...process.env, ROSTORE_ADMIN_TOKEN: TOKEN, ROSTORE_CA_FILE: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })))
}

const port = (i: number): number => cluster.nodes[i]!.port

beforeAll(async () => {
  certs = makeTestCertificates(join(tmp.dir, 'pki'))
  clusterFile = (await writeClusterFile(tmp.dir, { nodes: 2, partitionsPerNode: 2 })).path
  cluster = await loadCluster(clusterFile)
  for (const v of [1, 2]) {
    await buildVersion({ dir: tmp.dir, cluster, version: v, records: numberedRecords(KEYS, (i) => `v${v}-${i}`), output: out(v) })
  }
  // The nodes read the certificate from files they own: rotation rewrites them.
  copyFileSync(certs.certFile, join(tmp.dir, 'served.pem'))
  copyFileSync(certs.keyFile, join(tmp.dir, 'served.key'))
  nodes = await startClusterFromFile(clusterFile, {
    dataDir: (id) => join(tmp.dir, `data-${id}`),
    token: TOKEN,
    extraArgs: ['--tls-cert', join(tmp.dir, 'served.pem'), '--tls-key', join(tmp.dir, 'served.key')],
  })
})

afterAll(async () => {
  await nodes?.killAll()
  tmp.cleanup()
})

test('the node serves HTTPS: trusted with the CA, refused without it, and plain HTTP gets no answer', async () => {
  expect(nodes.nodes[0]!.events().find((e) => e['event'] === 'listening')).toMatchObject({
    tls: true,
    url: expect.stringMatching(/^https:/),
  })
  expect(await httpsGet(port(0), '/health', { ca: certs.ca })).toMatchObject({ status: 200 })
  await expect(httpsGet(port(0), '/health')).rejects.toMatchObject({ code: expect.stringMatching(/SELF_SIGNED|UNABLE_TO_VERIFY/) })
  await expect(httpsGet(port(0), '/health', { ca: certs.ca, servername: 'other.example' })).rejects.toMatchObject({
    code: 'ERR_TLS_CERT_ALTNAME_INVALID',
  })
  // A plain-text request to the TLS port never gets an HTTP answer (the bytes are not a handshake).
  const answer = await new Promise<string>((resolve) => {
    const s = connect(port(0), '127.0.0.1', () => s.write(`GET /admin/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`))
    let got = ''
    s.on('data', (d: Buffer) => (got += d.toString('latin1')))
    s.on('close', () => resolve(got))
    s.on('error', () => resolve(got))
  })
  expect(answer).not.toMatch(/^HTTP\/1\.1 200/)
})

test('the CLI pushes, lists, reads, rolls back and repairs over TLS with --ca-file', async () => {
  const common = ['--cluster', clusterFile, '--store', 'st', '--ca-file', certs.caFile]
  const push1 = await cli(['push', ...common, '--from', out(1)])
  expect({ code: push1.code, stderr: push1.stderr.slice(-500) }).toMatchObject({ code: 0 })
  expect(push1.stdout).toContain('live')
  const push2 = await cli(['push', ...common, '--from', out(2)])
  expect(push2.code).toBe(0)
  const versions = await cli(['versions', ...common, '--json'])
  expect(versions.code).toBe(0)
  expect((JSON.parse(versions.stdout) as { nodes: { live: number }[] }).nodes.map((n) => n.live)).toEqual([2, 2])
  const get = await cli(['get', ...common, 'key-7'])
  expect({ code: get.code, value: get.stdout }).toEqual({ code: 0, value: 'v2-7' })
  const rollback = await cli(['rollback', ...common])
  expect(rollback.code).toBe(0)
  expect(rollback.stdout).toContain('back to version 1')
  // ROSTORE_CA_FILE instead of the option.
  const env = await cli(['get', '--cluster', clusterFile, '--store', 'st', 'key-8'], { ROSTORE_CA_FILE: certs.caFile })
  expect({ code: env.code, value: env.stdout }).toEqual({ code: 0, value: 'v1-8' })
  const repair = await cli(['repair', ...common, '--from', out(1)])
  expect(repair.code).toBe(0)
})

test('without the CA, or over plain HTTP, the CLI fails and says why', async () => {
  // versions reports per node (exit 0, an error row for each); get and rollback fail outright.
  const plain = await cli(['versions', '--cluster', clusterFile, '--store', 'st'])
  expect(plain.stdout.match(/error: .*give --tls or --ca-file/g)).toHaveLength(2)
  const systemCas = await cli(['versions', '--cluster', clusterFile, '--store', 'st', '--tls'])
  expect(systemCas.stdout.match(/error: .*certificate/gi)).toHaveLength(2)
  const get = await cli(['get', '--cluster', clusterFile, '--store', 'st', 'key-1'])
  expect(get.code).toBe(1)
  expect(get.stderr).toMatch(/give --tls or --ca-file/)
  const rollback = await cli(['rollback', '--cluster', clusterFile, '--store', 'st', '--tls'])
  expect(rollback.code).toBe(1)
  expect(rollback.stderr).toMatch(/certificate/i)
  const badFile = await cli(['versions', '--cluster', clusterFile, '--store', 'st', '--ca-file', clusterFile])
  expect(badFile.code).toBe(1)
  expect(badFile.stderr).toContain('holds no PEM certificate')
})

test('the library reads through StoreClient with clusterWithTls', async () => {
  const client = await StoreClient.connect({ cluster: clusterWithTls(cluster, { ca: certs.ca }), store: 'st', timeoutMs: 5000 })
  try {
    const values = await client.getMany(Array.from({ length: KEYS }, (_, i) => `key-${i}`))
    values.forEach((v, i) => expect(v?.toString()).toBe(`v1-${i}`))
  } finally {
    client.close()
  }
})

test('SIGHUP loads a new certificate without a restart; a bad one keeps the old', async () => {
  const next = makeTestCertificates(join(tmp.dir, 'pki2'), 'next')
  copyFileSync(next.certFile, join(tmp.dir, 'served.pem'))
  copyFileSync(next.keyFile, join(tmp.dir, 'served.key'))
  for (const n of nodes.nodes) n.signal('SIGHUP')
  for (const n of nodes.nodes) await n.waitForEvent((e) => e['event'] === 'tls-reloaded', 10_000)
  expect(await httpsGet(port(1), '/health', { ca: next.ca })).toMatchObject({ status: 200 })
  await expect(httpsGet(port(1), '/health', { ca: certs.ca })).rejects.toBeDefined()
  // A key that does not match: refused, logged, the served certificate unchanged.
  copyFileSync(certs.keyFile, join(tmp.dir, 'served.key'))
  nodes.nodes[1]!.signal('SIGHUP')
  await nodes.nodes[1]!.waitForEvent((e) => e['event'] === 'tls-reload-failed', 10_000)
  expect(await httpsGet(port(1), '/health', { ca: next.ca })).toMatchObject({ status: 200 })
})

test('a node given a key that does not match its certificate refuses to start', async () => {
  const other = makeTestCertificates(join(tmp.dir, 'pki3'), 'other')
  const r = await cli([
    'serve',
    '--cluster',
    clusterFile,
    '--node-id',
    '0',
    '--port',
    '0',
    '--data-dir',
    join(tmp.dir, 'data-x'),
    '--tls-cert',
    certs.certFile,
    '--tls-key',
    other.keyFile,
  ])
  expect(r.code).toBe(1)
  expect(r.stderr).toMatch(/RO_BAD_OPTION/)
  expect(r.stderr).toContain('not a usable certificate and key')
})
