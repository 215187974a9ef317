import { closeSync, fstatSync, openSync, writeSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { makeTmp } from '../../../testkit/stores/tmp'
import { json, request, type HttpResult } from '../../../testkit/cluster/node-process'
import { startNode, type RunningNode } from '../../../server/node'
import { nullLogger } from '../../../server/log'
import { decodeValues, encodeKeys } from '../../../formats/wire/multiget'

const TOKEN = 'unit-test-token-0123456789'
const AUTH = { authorization: `Bearer ${TOKEN}` }
const cluster = { name: 'unit', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0] }] }
const BIN_KEY = Buffer.from([0xff, 0x00, 0x2f, 0x41]) // not UTF-8, holds a '/'

function records(v: number): [string | Buffer, string | Buffer][] {
  const out: [string | Buffer, string | Buffer][] = []
  for (let i = 0; i < 100; i++) out.push([`key-${i}`, `v${v}:key-${i}`])
  out.push(['with/slash and space', `v${v}:slash`])
  out.push([BIN_KEY, Buffer.from([v, 0, 255, 10])])
  out.push(['empty-value', ''])
  return out
}

describe('HTTP API (in-process node)', () => {
  const tmp = makeTmp('rostore-app-')
  let node: RunningNode
  const src: Record<number, string> = {}
  const url = (p: string): string => `${node.url}${p}`
  const get = (p: string, headers: Record<string, string> = {}): Promise<HttpResult> => request(url(p), { headers })
  const admin = (method: string, p: string, body?: object | string | Buffer, headers: Record<string, string> = AUTH): Promise<HttpResult> =>
    request(url(`/admin${p}`), { method, body, headers })

  async function waitJob(id: string): Promise<Record<string, unknown>> {
    for (;;) {
      const j = json(await admin('GET', `/jobs/${id}`))
      if (j['state'] !== 'running') return j
      await new Promise((r) => setTimeout(r, 10))
    }
  }

  beforeAll(async () => {
    for (const v of [1, 2, 3]) {
      src[v] = join(tmp.dir, `src-v${v}`)
      await makeNodeDir(src[v]!, records(v), { store: 'users', version: v, chunks: 2 })
    }
    node = await startNode({
      cluster,
      nodeId: 0,
      dataDir: join(tmp.dir, 'data'),
      adminToken: TOKEN,
      bind: '127.0.0.1',
      port: 0,
      log: nullLogger,
      defaultMetrics: false,
      timeouts: { headersMs: 1000, requestMs: 3000, checkIntervalMs: 200 },
    })
    const r = await admin('POST', '/stores/users/install', { path: src[1], swap: true })
    expect(r.status).toBe(202)
    expect(r.headers['location']).toBe(`/admin/jobs/${json(r)['id']}`)
    expect(await waitJob(String(json(r)['id']))).toMatchObject({ state: 'succeeded', result: { version: 1, swap: { from: null, to: 1 } } })
  })

  afterAll(async () => {
    await node?.close()
    tmp.cleanup()
  })

  test('single get: value bytes, version header, 404 when absent', async () => {
    const r = await get('/stores/users/keys/key-5')
    expect(r.status).toBe(200)
    expect(r.headers['content-type']).toBe('application/octet-stream')
    expect(r.headers['x-rostore-version']).toBe('1')
    expect(r.body.toString()).toBe('v1:key-5')
    const miss = await get('/stores/users/keys/nope')
    expect(miss.status).toBe(404)
    expect(miss.body.length).toBe(0)
    expect(miss.headers['x-rostore-version']).toBe('1')
    const empty = await get('/stores/users/keys/empty-value')
    expect(empty.status).toBe(200)
    expect(empty.body.length).toBe(0)
  })

  test('keys are percent-decoded to bytes', async () => {
    expect((await get(`/stores/users/keys/${encodeURIComponent('with/slash and space')}`)).body.toString()).toBe('v1:slash')
    const enc = [...BIN_KEY].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')
    const r = await get(`/stores/users/keys/${enc}`)
    expect(r.status).toBe(200)
    expect([...r.body]).toEqual([1, 0, 255, 10])
    expect((await get('/stores/users/keys/%zz')).status).toBe(400)
  })

  test('HEAD get', async () => {
    const r = await request(url('/stores/users/keys/key-1'), { method: 'HEAD' })
    expect(r.status).toBe(200)
    expect(r.headers['content-length']).toBe(String('v1:key-1'.length))
    expect(r.body.length).toBe(0)
  })

  test('key and URL bounds: 414', async () => {
    expect((await get(`/stores/users/keys/${'a'.repeat(65535)}`)).status).toBe(404)
    expect((await get(`/stores/users/keys/${'a'.repeat(65536)}`)).status).toBe(414)
    expect((await get(`/stores/users/keys/${'%41'.repeat(65536)}`)).status).toBe(414)
    const huge = await request(url(`/stores/users/keys/${'a'.repeat((1 << 20) + 10)}`), { agent: false })
    expect([414, 431]).toContain(huge.status)
  })

  test('unknown store 421 (not serving, never absent), invalid names 400, unknown routes 404, wrong methods 405', async () => {
    const r = await get('/stores/orders/keys/x')
    expect(r.status).toBe(421)
    expect(json(r)).toMatchObject({ error: { code: 'RO_NOT_SERVING' } })
    for (const p of [
      '/stores/..%2F..%2Fetc/keys/x',
      '/stores/%2e%2e/keys/x',
      '/stores/../keys/x',
      '/stores/a%00b/keys/x',
      `/stores/${'s'.repeat(200)}/keys/x`,
      '/stores/.hidden',
    ]) {
      const bad = await get(p)
      expect({ p, status: bad.status }).toEqual({ p, status: 400 })
      expect(json(bad)).toMatchObject({ error: { code: 'RO_BAD_REQUEST' } })
    }
    expect((await get('/nope')).status).toBe(404)
    const m = await request(url('/stores/users/keys/x'), { method: 'DELETE' })
    expect(m.status).toBe(405)
    expect(m.headers['allow']).toBe('GET, HEAD')
  })

  test('multi-get: framing, order, absent, binary; all from one version', async () => {
    const keys = ['key-1', 'nope', BIN_KEY, 'empty-value', 'key-99', 'key-1']
    const r = await request(url('/stores/users/multi-get'), { method: 'POST', body: encodeKeys(keys) })
    expect(r.status).toBe(200)
    expect(r.headers['x-rostore-version']).toBe('1')
    expect(r.headers['x-rostore-keys']).toBe('6')
    const vals = decodeValues(r.body, keys.length)
    expect(vals.map((v) => (v === undefined ? null : v.toString('hex')))).toEqual([
      Buffer.from('v1:key-1').toString('hex'),
      null,
      '0100ff0a',
      '',
      Buffer.from('v1:key-99').toString('hex'),
      Buffer.from('v1:key-1').toString('hex'),
    ])
    const none = await request(url('/stores/users/multi-get'), { method: 'POST', body: Buffer.alloc(0) })
    expect(none.status).toBe(200)
    expect(none.body.length).toBe(0)
  })

  test('multi-get of many keys streams in batches', async () => {
    const keys = Array.from({ length: 10_000 }, (_, i) => `key-${i % 150}`)
    const r = await request(url('/stores/users/multi-get'), { method: 'POST', body: encodeKeys(keys) })
    expect(r.status).toBe(200)
    const vals = decodeValues(r.body, keys.length)
    vals.forEach((v, i) => expect(v?.toString()).toBe(i % 150 < 100 ? `v1:key-${i % 150}` : undefined))
  })

  test('multi-get bounds: 400 malformed, 413 too many keys / long key / big body', async () => {
    const post = (body: Buffer): Promise<HttpResult> => request(url('/stores/users/multi-get'), { method: 'POST', body, agent: false })
    expect((await post(Buffer.from([0, 0, 0, 9, 1]))).status).toBe(400)
    expect((await post(encodeKeys(Array.from({ length: 10_001 }, () => 'k')))).status).toBe(413)
    expect((await post(Buffer.from([0, 1, 0, 0]))).status).toBe(413)
    // A declared body over 16 MiB is refused before it is read.
    const status = await new Promise<string>((resolve, reject) => {
      const s = connect(node.port, '127.0.0.1', () => {
        s.write(`POST /stores/users/multi-get HTTP/1.1\r\nHost: x\r\nContent-Length: ${(16 << 20) + 1}\r\n\r\n`)
        s.write(Buffer.alloc(1000))
      })
      let text = ''
      s.on('data', (d) => {
        text += d.toString('latin1')
        if (text.includes('\r\n')) {
          resolve(text.split('\r\n')[0] ?? '')
          s.destroy()
        }
      })
      s.on('error', reject)
    })
    expect(status).toMatch(/^HTTP\/1\.1 413/)
  })

  test('store metadata for clients', async () => {
    const r = await get('/stores/users')
    expect(r.status).toBe(200)
    expect(json(r)).toMatchObject({
      store: 'users',
      version: 1,
      replication: 1,
      keySerializer: 'string',
      valueSerializer: 'string',
      partitions: [0],
      layout: [{ id: 0, partitions: [0] }],
      chunks: 2,
      records: 103,
      compression: 'none',
      stale: false,
    })
    expect(json(await get('/stores'))).toEqual({ stores: [{ store: 'users', version: 1, stale: false }] })
  })

  test('status, health and metrics', async () => {
    const s = json(await get('/status'))
    expect(s['node']).toMatchObject({ id: 0, cluster: 'unit', adminEnabled: true })
    expect(s['stores']).toEqual([expect.objectContaining({ store: 'users', version: 1, records: 103, stale: false })])
    expect(json(await get('/health'))).toMatchObject({ status: 'ok' })
    const m = await get('/metrics')
    expect(m.headers['content-type']).toMatch(/^text\/plain/)
    const text = m.body.toString()
    expect(text).toMatch(/rostore_requests_total\{store="users",op="get",status="200"\} \d+/)
    expect(text).toMatch(/rostore_request_duration_seconds_bucket\{le="[0-9.]+",store="users",op="get"\}/)
    expect(text).toMatch(/rostore_swaps_total\{store="users"\} 1/)
    expect(text).toMatch(/rostore_store_live_version\{store="users"\} 1/)
    expect(text).toContain('rostore_fetch_bytes_total')
    // Unknown store names do not create label values.
    expect(text).not.toContain('store="orders"')
  })

  test('admin: 401 without or with a wrong token, before anything else', async () => {
    for (const headers of [
      {},
      { authorization: 'Bearer wrong' },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: TOKEN },
    ] as Record<string, string>[]) {
      for (const [method, p] of [
        ['GET', '/stores/users/versions'],
        ['POST', '/stores/users/swap'],
        ['POST', '/stores/users/rollback'],
        ['DELETE', '/stores/users/versions/1'],
        ['POST', '/stores/users/install'],
        ['GET', '/jobs'],
        ['GET', '/stores/..%2f/versions'],
      ] as const) {
        const r = await admin(method, p, method === 'POST' ? { version: 1 } : undefined, headers)
        expect({ method, p, status: r.status }).toEqual({ method, p, status: 401 })
        expect(r.headers['www-authenticate']).toMatch(/^Bearer/)
      }
    }
  })

  test('admin: traversal and bad values are 400', async () => {
    for (const p of [
      '/stores/..%2F..%2Fetc/versions',
      '/stores/%2e%2e/swap',
      '/stores/a%2Fb/rollback',
      '/stores/users/versions/..%2F1',
      '/stores/users/versions/0',
      '/stores/users/versions/-1',
      '/jobs/..%2Fx',
    ]) {
      const method = p.endsWith('versions') || p.startsWith('/jobs') ? 'GET' : p.includes('/versions/') ? 'DELETE' : 'POST'
      const r = await admin(method, p, method === 'POST' ? {} : undefined)
      expect({ p, status: r.status }).toEqual({ p, status: 400 })
    }
    const bad = [
      ['/stores/users/swap', { version: '../2' }],
      ['/stores/users/swap', { version: 0 }],
      ['/stores/users/swap', { version: 1.5 }],
      ['/stores/users/swap', { verison: 2 }],
      ['/stores/users/rollback', { to: 'x' }],
      ['/stores/users/install', { path: 'relative/dir' }],
      ['/stores/users/install', { path: 5 }],
      ['/stores/users/install', { path: '/x', swap: 'yes' }],
    ] as const
    for (const [p, body] of bad) {
      const r = await admin('POST', p, body)
      expect({ p, body, status: r.status }).toEqual({ p, body, status: 400 })
    }
    expect((await admin('POST', '/stores/users/swap', '{not json')).status).toBe(400)
    expect((await admin('POST', '/stores/users/swap', '[1]')).status).toBe(400)
    const big = await request(url('/admin/stores/users/swap'), {
      method: 'POST',
      body: Buffer.alloc((1 << 20) + 1, 0x20),
      headers: AUTH,
      agent: false,
    })
    expect(big.status).toBe(413)
  })

  test('admin: versions, install, swap, rollback, delete, stale; reads follow', async () => {
    for (const v of [2, 3]) {
      const r = await admin('POST', '/stores/users/install', { path: src[v] })
      expect(await waitJob(String(json(r)['id']))).toMatchObject({ state: 'succeeded', result: { version: v } })
    }
    // Installing the same version again fails in the job with a conflict.
    const dup = await admin('POST', '/stores/users/install', { path: src[2] })
    expect(await waitJob(String(json(dup)['id']))).toMatchObject({ state: 'failed', error: { code: 'RO_CONFLICT' } })

    const versions = json<{ live: number; versions: { version: number; live: boolean }[] }>(await admin('GET', '/stores/users/versions'))
    expect(versions.live).toBe(1)
    expect(versions.versions.map((v) => [v.version, v.live])).toEqual([
      [1, true],
      [2, false],
      [3, false],
    ])

    expect(json(await admin('POST', '/stores/users/swap', { version: 3 }))).toMatchObject({ from: 1, to: 3, changed: true })
    expect((await get('/stores/users/keys/key-2')).body.toString()).toBe('v3:key-2')
    expect(json(await admin('POST', '/stores/users/rollback', {}))).toMatchObject({ from: 3, to: 2 })
    expect((await get('/stores/users/keys/key-2')).body.toString()).toBe('v2:key-2')
    expect(json(await admin('POST', '/stores/users/rollback'))).toMatchObject({ from: 2, to: 1 })
    const none = await admin('POST', '/stores/users/rollback')
    expect(none.status).toBe(409)
    expect(json(none)).toMatchObject({ error: { code: 'RO_CONFLICT', message: expect.stringMatching(/no version older/) } })
    expect(json(await admin('POST', '/stores/users/rollback', { to: 3 }))).toMatchObject({ from: 1, to: 3 })
    expect((await admin('POST', '/stores/users/swap', { version: 9 })).status).toBe(404)
    expect((await admin('POST', '/stores/orders/swap', { version: 1 })).status).toBe(404)

    expect((await admin('DELETE', '/stores/users/versions/3')).status).toBe(409)
    expect(json(await admin('DELETE', '/stores/users/versions/2'))).toEqual({ store: 'users', deleted: 2 })
    expect((await admin('DELETE', '/stores/users/versions/2')).status).toBe(404)

    expect((await admin('PUT', '/stores/users/stale', { reason: 'push failed' })).status).toBe(200)
    const st = await get('/stores/users/keys/key-1')
    expect(st.status).toBe(503)
    expect(json(st)).toMatchObject({ error: { code: 'RO_UNAVAILABLE' } })
    expect(json(await get('/stores/users'))).toMatchObject({ stale: true, staleReason: 'push failed' })
    expect((await request(url('/stores/users/multi-get'), { method: 'POST', body: encodeKeys(['key-1']) })).status).toBe(503)
    expect((await admin('DELETE', '/stores/users/stale')).status).toBe(200)
    expect((await get('/stores/users/keys/key-1')).body.toString()).toBe('v3:key-1')

    const jobs = json<{ jobs: unknown[] }>(await admin('GET', '/jobs'))
    expect(jobs.jobs.length).toBeGreaterThanOrEqual(3)
    expect((await admin('GET', '/jobs/00000000-0000-4000-8000-000000000000')).status).toBe(404)
    expect(json(await admin('POST', '/rescan'))).toEqual({ added: [] })
  })

  test('a failing install job reports the verification error; nothing goes live', async () => {
    const r = await admin('POST', '/stores/users/install', { path: join(tmp.dir, 'missing') })
    expect(await waitJob(String(json(r)['id']))).toMatchObject({ state: 'failed', error: { code: 'RO_NOT_FOUND' } })
  })

  test('fetch from a build output root (file source) installs a version', async () => {
    // A build output root holds node-<id>/ directories.
    const root = join(tmp.dir, 'build-out')
    await makeNodeDir(join(root, 'node-0'), records(5), { store: 'users', version: 5 })
    const r = await admin('POST', '/stores/users/fetch', { source: root, swap: true })
    expect(r.status).toBe(202)
    expect(await waitJob(String(json(r)['id']))).toMatchObject({ state: 'succeeded', result: { version: 5, swap: { to: 5 } } })
    expect((await get('/stores/users/keys/key-3')).body.toString()).toBe('v5:key-3')
    expect((await admin('POST', '/stores/users/fetch', { source: root, version: 5 })).status).toBe(409)
    expect((await admin('POST', '/stores/users/fetch', { source: root, maxBytesPerSec: -1 })).status).toBe(400)
  })

  test('a job poll with ?waitMs is answered with the ended job; bad waits are refused', async () => {
    const root = join(tmp.dir, 'build-out-wait')
    await makeNodeDir(join(root, 'node-0'), records(6), { store: 'users', version: 6 })
    const r = await admin('POST', '/stores/users/fetch', { source: root })
    expect(r.status).toBe(202)
    const id = String(json(r)['id'])
    // Long polls until the job has ended: each answer is either the ended job or, after its wait, a running one.
    let j = json(await admin('GET', `/jobs/${id}?waitMs=2000`))
    for (let n = 0; n < 30 && j['state'] === 'running'; n++) j = json(await admin('GET', `/jobs/${id}?waitMs=2000`))
    expect(j).toMatchObject({ state: 'succeeded', result: { version: 6 } })
    for (const bad of ['abc', '-1', '1.5', '10001', '1e3', '']) {
      const res = await admin('GET', `/jobs/${id}?waitMs=${bad}`)
      expect([res.status, json(res)['error']]).toEqual([400, expect.objectContaining({ code: 'RO_BAD_REQUEST' })])
    }
    expect((await admin('GET', `/jobs/${id}?wait=5`)).status).toBe(400)
    expect((await admin('GET', '/jobs/00000000-0000-0000-0000-000000000000?waitMs=100')).status).toBe(404)
    // Without the admin token, no wait is held.
    expect((await admin('GET', `/jobs/${id}?waitMs=5000`, undefined, {})).status).toBe(401)
  })

  test('a record damaged on disk after install: 422 RO_CORRUPT, counted and logged, never a wrong value', async () => {
    const live = json(await get('/stores/users'))['version'] as number
    for (const f of ['0.data', '1.data']) {
      const path = join(tmp.dir, 'data', 'users', `version-${live}`, f)
      const fd = openSync(path, 'r+')
      const size = fstatSync(fd).size
      writeSync(fd, Buffer.alloc(size - 64, 0x5a), 0, size - 64, 64)
      closeSync(fd)
    }
    const r = await get('/stores/users/keys/key-1')
    expect(r.status).toBe(422)
    expect(json(r)).toMatchObject({ error: { code: 'RO_CORRUPT' } })
    const m = await request(url('/stores/users/multi-get'), { method: 'POST', body: encodeKeys(['key-1', 'key-2']) })
    expect(m.status).toBe(422)
    expect((await get('/metrics')).body.toString()).toMatch(/rostore_errors_total\{store="users",code="RO_CORRUPT"\} 2/)
  })

  test('slow-loris: a connection that never finishes its headers is closed', async () => {
    const t0 = Date.now()
    const closed = await new Promise<number>((resolve) => {
      const s = connect(node.port, '127.0.0.1', () => s.write('GET /health HTTP/1.1\r\nHost: x\r\n'))
      s.on('data', () => undefined)
      s.on('close', () => resolve(Date.now() - t0))
      s.on('error', () => undefined)
    })
    expect(closed).toBeLessThan(5000)
  })
})

describe('admin without a configured token', () => {
  const tmp = makeTmp('rostore-app-noadmin-')
  let node: RunningNode
  beforeAll(async () => {
    node = await startNode({
      cluster,
      nodeId: 0,
      dataDir: join(tmp.dir, 'data'),
      bind: '127.0.0.1',
      port: 0,
      log: nullLogger,
      defaultMetrics: false,
    })
  })
  afterAll(async () => {
    await node.close()
    tmp.cleanup()
  })

  test('every admin route answers 403, whatever the header', async () => {
    for (const headers of [{}, { authorization: 'Bearer ' }, { authorization: 'Bearer anything' }] as Record<string, string>[]) {
      const r = await request(`${node.url}/admin/stores/users/versions`, { headers })
      expect(r.status).toBe(403)
    }
  })

  test('node not in the cluster is refused', async () => {
    await expect(startNode({ cluster, nodeId: 7, dataDir: join(tmp.dir, 'd2'), port: 0, log: nullLogger })).rejects.toMatchObject({
      code: 'RO_BAD_CLUSTER',
    })
  })
})
