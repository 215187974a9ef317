import { join } from 'node:path'
import { makeTmp } from '../../../testkit/stores/tmp'
import { json, NodeProcess, request, startSingleNode } from '../../../testkit/cluster/node-process'
import { makeVersions, STORE } from './fixture'

const TOKEN = 'auth-test-token-0123456789abcdef'

const ADMIN_CALLS: readonly [string, string, object | undefined][] = [
  ['GET', `/admin/stores/${STORE}/versions`, undefined],
  ['POST', `/admin/stores/${STORE}/install`, { path: '/tmp' }],
  ['POST', `/admin/stores/${STORE}/fetch`, { source: '/tmp' }],
  ['POST', `/admin/stores/${STORE}/swap`, { version: 1 }],
  ['POST', `/admin/stores/${STORE}/rollback`, {}],
  ['DELETE', `/admin/stores/${STORE}/versions/1`, undefined],
  ['PUT', `/admin/stores/${STORE}/stale`, {}],
  ['DELETE', `/admin/stores/${STORE}/stale`, undefined],
  ['GET', '/admin/jobs', undefined],
  ['GET', '/admin/jobs/00000000-0000-4000-8000-000000000000', undefined],
  ['POST', '/admin/jobs/00000000-0000-4000-8000-000000000000/cancel', undefined],
  ['POST', '/admin/rescan', undefined],
  ['GET', '/admin/status', undefined],
  ['GET', '/admin/cluster/nodes', undefined],
  ['POST', '/admin/cluster/nodes', { nodes: [{ id: 9, host: 'h', port: 1 }] }],
]

describe('admin authentication and name validation (real node)', () => {
  const tmp = makeTmp('rostore-auth-')
  let node: NodeProcess
  let open: NodeProcess | undefined
  beforeAll(async () => {
    const src = await makeVersions(tmp.dir, [1])
    node = await startSingleNode({ dir: tmp.dir, dataDir: join(tmp.dir, 'data'), token: TOKEN })
    await node.install(STORE, src[1]!, { swap: true })
  })
  afterAll(async () => {
    if (node?.running) await node.kill9()
    if (open?.running) await open.kill9()
    tmp.cleanup()
  })

  test('every admin call without or with a wrong token gets 401, and changes nothing', async () => {
    const wrong: Record<string, string>[] = [
      {},
      { authorization: 'Bearer wrong' },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      { authorization: `Bearer ${TOKEN}0` },
      { authorization: `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}` },
      { authorization: TOKEN },
    ]
    for (const headers of wrong) {
      for (const [method, path, body] of ADMIN_CALLS) {
        const r = await request(`${node.url}${path}`, { method, headers, body })
        expect({ method, path, status: r.status }).toEqual({ method, path, status: 401 })
        expect(json(r)).toMatchObject({ error: { code: 'RO_UNAUTHORIZED' } })
      }
    }
    expect(json(await node.request('/status'))).toMatchObject({ stores: [{ store: STORE, version: 1, versions: [1], stale: false }] })
  })

  test('traversal and invalid names get 400 (public and admin routes)', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` }
    const cases: [string, string, object | undefined][] = [
      ['GET', '/stores/..%2F..%2Fetc%2Fpasswd/keys/x', undefined],
      ['GET', '/stores/../keys/x', undefined],
      ['GET', '/stores/%2e%2e/keys/x', undefined],
      ['GET', '/stores/%2Fetc/keys/x', undefined],
      ['GET', `/stores/${'a'.repeat(129)}/keys/x`, undefined],
      ['POST', '/stores/..%5C..%5Cx/multi-get', undefined],
      ['GET', '/admin/stores/..%2F..%2Ftmp/versions', undefined],
      ['POST', '/admin/stores/%2e%2e/install', { path: '/tmp' }],
      ['POST', '/admin/stores/a%2Fb/swap', { version: 1 }],
      ['POST', `/admin/stores/${STORE}/swap`, { version: '../1' }],
      ['POST', `/admin/stores/${STORE}/swap`, { version: -1 }],
      ['POST', `/admin/stores/${STORE}/rollback`, { to: '1/../2' }],
      ['DELETE', `/admin/stores/${STORE}/versions/..%2F1`, undefined],
      ['DELETE', `/admin/stores/${STORE}/versions/version-1`, undefined],
      ['POST', `/admin/stores/${STORE}/install`, { path: '../relative' }],
      ['GET', '/admin/jobs/..%2F..%2Fetc', undefined],
    ]
    for (const [method, path, body] of cases) {
      const headers = path.startsWith('/admin') ? auth : {}
      const r = await request(`${node.url}${path}`, { method, headers, body })
      expect({ method, path, status: r.status }).toEqual({ method, path, status: 400 })
    }
  })

  test('the token never appears in the logs', async () => {
    await node.admin('GET', `/stores/${STORE}/versions`)
    expect(node.lines.join('\n')).not.toContain(TOKEN)
  })

  test('a node without a token refuses every admin call with 403', async () => {
    open = await startSingleNode({ dir: join(tmp.dir, 'open'), dataDir: join(tmp.dir, 'open-data') })
    for (const headers of [{}, { authorization: 'Bearer ' }, { authorization: `Bearer ${TOKEN}` }] as Record<string, string>[]) {
      for (const [method, path, body] of ADMIN_CALLS) {
        const r = await request(`${open.url}${path}`, { method, headers, body })
        expect({ method, path, status: r.status }).toEqual({ method, path, status: 403 })
      }
    }
    expect(open.events().some((e) => e['event'] === 'admin-disabled')).toBe(true)
  })
})
