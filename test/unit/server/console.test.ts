import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { freePort } from '../../../common/net'
import { EventRing } from '../../../server/console/event-ring'
import { NodeSampler, sumCounters } from '../../../server/console/node-sampler'
import { nullLogger, type Logger } from '../../../server/log'
import { startNode, type RunningNode } from '../../../server/node'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { json, request } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

describe('EventRing', () => {
  test('keeps the newest events, folds repeats, and records only listed log events with checked fields', () => {
    const ring = new EventRing(3)
    const lines: string[] = []
    const inner: Logger = { ...nullLogger, info: (e) => void lines.push(e), warn: (e) => void lines.push(e) }
    const log = ring.tap(inner)
    log.info('installed', { store: 'users', version: 4, records: 10, path: '/secret/dir' })
    log.info('listening', { dataDir: '/secret/dir' })
    log.warn('repair-failed', { store: '../etc', version: 'x', error: 'ENOENT /secret/dir/file' })
    ring.add('warn', 'refused', undefined, 'request refused')
    ring.add('warn', 'refused', undefined, 'request refused', new Date(), 2)
    expect(lines).toEqual(['installed', 'listening', 'repair-failed'])
    const events = ring.recent(10)
    expect(events.map((e) => [e.kind, e.store, e.text, e.count])).toEqual([
      ['installed', 'users', 'v4 verified and installed', 1],
      ['repair-failed', null, 'repair to a version failed, retrying', 1],
      ['refused', null, 'request refused', 3],
    ])
    expect(JSON.stringify(events)).not.toContain('secret')
    ring.swapped({ store: 'users', kind: 'rollback', from: 5, to: 4, changed: true, elapsedMs: 3, flipMs: 1 })
    ring.swapped({ store: 'users', kind: 'swap', from: 4, to: 4, changed: false, elapsedMs: 0, flipMs: 0 })
    expect(ring.recent(10).map((e) => e.text)).toEqual([
      'repair to a version failed, retrying',
      'request refused',
      'rolled back to v4 (was v5)',
    ])
  })
})

describe('NodeSampler', () => {
  const text = (keys: number, refused: number): string =>
    [
      '# HELP rostore_keys_read_total x',
      `rostore_keys_read_total{store="a",result="hit"} ${keys}`,
      `rostore_keys_read_total{store="a",result="miss"} 0`,
      `rostore_resp_keys_total{store="a",source="forwarded",result="hit"} 1000`,
      `rostore_resp_keys_total{store="b",source="local",result="hit"} ${keys * 2}`,
      `rostore_requests_total{store="",op="console_cluster",status="401"} ${refused}`,
      `rostore_requests_total{store="a",op="get",status="200"} 99`,
      'process_resident_memory_bytes 12345',
    ].join('\n')

  test('reads per second per store from two samples, refused requests and corrupt reads as events', () => {
    const ring = new EventRing()
    const s = new NodeSampler()
    expect(sumCounters(text(10, 0)).rssBytes).toBe(12345)
    expect(s.sample(sumCounters(text(10, 0)), 1000, ring).total).toBeNull()
    const r = s.sample(sumCounters(text(30, 3)), 3000, ring)
    expect(r.byStore.get('a')).toBe(10)
    expect(r.byStore.get('b')).toBe(20)
    expect(r.total).toBe(30)
    s.noteCorrupt('a', 2, 'RO_CORRUPT', '2026-01-01T00:00:00.000Z', ring)
    s.noteCorrupt('a', 2, 'RO_CORRUPT', '2026-01-01T00:00:00.000Z', ring)
    expect(ring.recent(5).map((e) => [e.kind, e.store, e.text, e.count])).toEqual([
      ['refused', null, 'request refused: missing or wrong token', 3],
      ['corrupt-read', 'a', 'corrupt read (RO_CORRUPT): clients read other replicas', 2],
    ])
  })
})

describe('console routes (in-process node with a read token)', () => {
  const tmp = makeTmp('rostore-console-')
  const readToken = 'console-unit-read-token-0123'
  let node: RunningNode
  const get = (p: string, headers: Record<string, string> = {}) => request(`${node.url}${p}`, { headers })

  beforeAll(async () => {
    const src = join(tmp.dir, 'src')
    await makeNodeDir(src, [['k', 'v']], { store: 'users', version: 3, chunks: 1 })
    node = await startNode({
      cluster: { name: 'unit', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0] }] },
      nodeId: 0,
      dataDir: join(tmp.dir, 'data'),
      adminToken: 'console-unit-admin-token-0123',
      readToken,
      bind: '127.0.0.1',
      port: 0,
      log: nullLogger,
      defaultMetrics: false,
    })
    const r = await request(`${node.url}/admin/stores/users/install`, {
      method: 'POST',
      body: { path: src, swap: true },
      headers: { authorization: 'Bearer console-unit-admin-token-0123' },
    })
    await node.jobs.wait(json(r)['id'] as string)
  })

  afterAll(async () => {
    await node?.close()
    tmp.cleanup()
  })

  test('the page, script and style are public, with a strict CSP and their content types', async () => {
    for (const [path, type] of [
      ['/ui', 'text/html'],
      ['/ui/', 'text/html'],
      ['/ui/console.js', 'text/javascript'],
      ['/ui/console.css', 'text/css'],
    ] as const) {
      const r = await get(path)
      expect(r.status).toBe(200)
      expect(r.headers['content-type']).toContain(type)
      expect(r.headers['content-security-policy']).toMatch(/^default-src 'none'; script-src 'self';/)
      expect(r.headers['x-frame-options']).toBe('DENY')
    }
    expect((await request(`${node.url}/ui/console.js`, { method: 'POST' })).status).toBe(405)
    expect((await get('/ui/../package.json')).status).toBe(404)
    expect((await get('/ui/other.json')).status).toBe(404)
  })

  test('the views want the read token (or the admin token) and show the node without paths', async () => {
    expect((await get('/ui/node.json')).status).toBe(401)
    expect((await get('/ui/cluster.json', { authorization: 'Bearer nope-nope-nope' })).status).toBe(401)
    const r = await get('/ui/node.json', { authorization: `Bearer ${readToken}` })
    expect(r.status).toBe(200)
    const v = json<{
      id: number
      stores: { store: string; live: number; layout: { nodes: { holds: number[] }[] } }[]
      jobs: { kind: string; id: string }[]
    }>(r)
    expect(v.id).toBe(0)
    expect(v.stores.map((s) => [s.store, s.live, s.layout.nodes[0]?.holds])).toEqual([['users', 3, [0]]])
    expect(v.jobs.map((j) => [j.kind, j.id.length])).toEqual([['install', 8]])
    expect(r.body.toString()).not.toContain(tmp.dir)
    const c = await get('/ui/cluster.json', { authorization: 'Bearer console-unit-admin-token-0123' })
    expect(json<{ nodes: { id: number; up: boolean }[] }>(c).nodes).toMatchObject([{ id: 0, up: true }])
    // The two refused requests above are an event of the node.
    const again = json<{ events: { kind: string; count: number }[] }>(await get('/ui/node.json', { authorization: `Bearer ${readToken}` }))
    expect(again.events.filter((e) => e.kind === 'refused').map((e) => e.count)).toEqual([2])
  })
})

describe('cluster view of peers that show no view', () => {
  const tmp = makeTmp('rostore-console-peers-')
  let node: RunningNode
  let older: Server
  const readToken = 'console-peers-read-token-0123'

  beforeAll(async () => {
    // Node 1 stands for a rostore without a console (a rolling upgrade): it answers 404.
    older = createServer((_req, res) => res.writeHead(404).end())
    await new Promise<void>((resolve) => older.listen(0, '127.0.0.1', resolve))
    const olderPort = (older.address() as AddressInfo).port
    const closed = await freePort()
    node = await startNode({
      cluster: {
        name: 'peers',
        nodes: [
          { id: 0, host: '127.0.0.1', port: 1, partitions: [0] },
          { id: 1, host: '127.0.0.1', port: olderPort, partitions: [1] },
          { id: 2, host: '127.0.0.1', port: closed, partitions: [2] },
        ],
      },
      nodeId: 0,
      dataDir: join(tmp.dir, 'data'),
      readToken,
      bind: '127.0.0.1',
      port: 0,
      log: nullLogger,
      defaultMetrics: false,
      peerCheckTimeoutMs: 500,
      peerCheckGraceMs: 0,
    })
  })

  afterAll(async () => {
    await node?.close()
    older?.close()
    tmp.cleanup()
  })

  test('a peer without a console is up with no view; a closed port is down', async () => {
    const r = await request(`${node.url}/ui/cluster.json`, { headers: { authorization: `Bearer ${readToken}` } })
    const v = json<{ nodes: { id: number; up: boolean; error: string | null; view: unknown }[]; notShown: number }>(r)
    expect(v.nodes.map((n) => [n.id, n.up, n.error, n.view === null])).toEqual([
      [0, true, null, false],
      [1, true, 'no console', true],
      [2, false, 'unreachable', true],
    ])
    expect(v.notShown).toBe(0)
  })
})
