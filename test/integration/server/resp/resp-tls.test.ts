import { join } from 'node:path'
import Redis from 'ioredis'
import { redisCli } from '../../../../testkit/net/redis-cli'
import { makeTestCertificates } from '../../../../testkit/net/tls-certs'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { startSingleNode, type NodeProcess } from '../../../../testkit/cluster/node-process'
import { keyOf, makeVersions, STORE, valueOf } from '../fixture'

/**
 * A node started with --tls-cert/--tls-key serves its RESP port over TLS too (docs/API.md
 * "RESP and TLS"), in each of its 2 workers: a Redis client with the CA reads, a plain-text
 * client gets no answer, and the startup line says RESP is TLS.
 */
jest.setTimeout(120_000)
const tmp = makeTmp('rostore-resp-tls-')
let node: NodeProcess
let ca: Buffer

beforeAll(async () => {
  const certs = makeTestCertificates(join(tmp.dir, 'pki'))
  ca = certs.ca
  const src = await makeVersions(tmp.dir, [1])
  // Installed over plain HTTP first; the node then restarts on the same data with TLS.
  const plain = await startSingleNode({ dir: tmp.dir, token: 'resp-tls-admin-0123456789', workers: 1 })
  await plain.install(STORE, src[1]!, { swap: true })
  node = await plain.restart({
    workers: 2,
    extraArgs: ['--tls-cert', certs.certFile, '--tls-key', certs.keyFile, '--resp-port', '0', '--resp-default-store', STORE],
  })
})

afterAll(async () => {
  if (node?.running) await node.kill9()
  tmp.cleanup()
})

test('the startup line says RESP is TLS', () => {
  const listening = node.events().find((e) => e['event'] === 'listening')
  expect(listening).toMatchObject({ tls: true, respTls: true, respPort: node.respPort })
})

test('ioredis with the CA reads over TLS, on many connections (both workers)', async () => {
  const clients = Array.from(
    { length: 6 },
    () =>
      new Redis({
        host: '127.0.0.1',
        port: node.respPort!,
        tls: { ca },
        lazyConnect: true,
        enableReadyCheck: false,
        maxRetriesPerRequest: 1,
      }),
  )
  try {
    await Promise.all(clients.map((c) => c.connect()))
    const pids = new Set<string>()
    for (const [n, c] of clients.entries()) {
      expect(await c.get(keyOf(n))).toBe(valueOf(1, n))
      expect(await c.mget(keyOf(10), 'absent')).toEqual([valueOf(1, 10), null])
      pids.add(/run_id:([0-9a-f]+)/.exec(await c.info('server'))![1]!)
    }
    expect(pids.size).toBe(2)
  } finally {
    for (const c of clients) c.disconnect()
  }
})

test('a plain-text client gets no RESP answer from the TLS port', async () => {
  const r = await redisCli(node.respPort!, ['GET', keyOf(1)], { timeoutMs: 20_000 })
  expect(r.stdout).not.toContain(valueOf(1, 1))
  expect(r.stdout + r.stderr).not.toMatch(/v1\|/)
  // The node is still serving TLS clients afterwards.
  const c = new Redis({ host: '127.0.0.1', port: node.respPort!, tls: { ca }, lazyConnect: true, enableReadyCheck: false })
  try {
    await c.connect()
    expect(await c.get(keyOf(2))).toBe(valueOf(1, 2))
  } finally {
    c.disconnect()
  }
})
