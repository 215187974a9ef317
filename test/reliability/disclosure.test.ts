import { closeSync, openSync, readdirSync, readSync, realpathSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { encodeKeys } from '../../formats/wire/multiget'
import { json, startSingleNode, type HttpResult, type NodeProcess } from '../../testkit/cluster/node-process'
import { keyName, makeVersionDir, reportFigures } from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * What an unauthenticated caller can learn. Public responses (reads,
 * /status, /stores, /health, /metrics, every public error) carry codes and short messages:
 * no data directory path, no file name of a version, no process id, no error text of the
 * swapper or the reader. Those go to the node's log and to admin routes (GET /admin/status).
 *
 * The node here holds a healthy store, a store whose live version cannot be opened (its
 * index damaged while the node was down) and a store with one damaged record, so the
 * public error paths that used to quote file paths are all taken.
 */

jest.setTimeout(60_000)
const tmp = makeTmp('rostore-disclosure-')
const TOKEN = 'disclosure-token-0123456789abcdef'
const KEYS = 100
let node: NodeProcess
let dataDir: string
const figures = { publicResponses: 0, leaks: 0 }

function flipByte(path: string, at: number, xor: number): void {
  const fd = openSync(path, 'r+')
  try {
    const b = Buffer.alloc(1)
    readSync(fd, b, 0, 1, at)
    b[0] = (b[0] as number) ^ xor
    writeSync(fd, b, 0, 1, at)
  } finally {
    closeSync(fd)
  }
}

/** What no public response may contain. */
function secrets(): string[] {
  return [tmp.dir, realpathSync(tmp.dir), dataDir, 'version-', '.data', '.index', 'metadata.json', '"pid"', 'ENOENT', 'EIO']
}

function expectNothingDisclosed(what: string, r: HttpResult): void {
  figures.publicResponses++
  const body = r.body.toString('utf8')
  for (const s of secrets()) {
    if (body.includes(s)) figures.leaks++
    expect({ what, body: body.slice(0, 400) }).toEqual({ what, body: expect.not.stringContaining(s) })
  }
}

beforeAll(async () => {
  dataDir = join(tmp.dir, 'data')
  const src = (store: string): Promise<string> => makeVersionDir(join(tmp.dir, 'src', store, 'node-0'), { store, version: 1, keys: KEYS })
  node = await startSingleNode({ dir: join(tmp.dir, 'node'), dataDir, token: TOKEN })
  for (const store of ['users', 'broken', 'damaged']) await node.install(store, await src(store), { swap: true })
  // broken: its live index damaged while the node is down, so it cannot open at start.
  await node.sigterm()
  const index = readdirSync(join(dataDir, 'broken', 'version-1')).find((n) => n.endsWith('.index'))!
  flipByte(join(dataDir, 'broken', 'version-1', index), 64 + 16 * 2 + 1, 0x40)
  node = await node.restart()
  // damaged: one record's bytes flipped on disk; reading that key fails its CRC.
  const data = readdirSync(join(dataDir, 'damaged', 'version-1')).find((n) => n.endsWith('.data'))!
  const file = join(dataDir, 'damaged', 'version-1', data)
  flipByte(file, statSync(file).size - 4, 0x10)
})

afterAll(async () => {
  if (node?.running) await node.kill9()
  tmp.cleanup()
  reportFigures(
    'disclosure',
    `disclosure: ${figures.publicResponses} public responses checked, ${figures.leaks} disclosed a path, pid or internal error`,
    figures,
  )
})

test('public routes and public errors disclose no path, pid or internal error text', async () => {
  const status = await node.request('/status')
  expect(status.status).toBe(200)
  const broken = json<{ stores: { store: string; error?: string }[] }>(status).stores.find((s) => s.store === 'broken')
  expect(broken?.error).toBe('the live version could not be opened')
  expectNothingDisclosed('/status', status)
  for (const path of ['/health', '/metrics', '/stores', '/stores/users', '/stores/nosuch/keys/x', '/nowhere', '/stores/%ZZ']) {
    expectNothingDisclosed(path, await node.request(path))
  }
  // The store that cannot open: 503, a short message.
  for (const path of ['/stores/broken', '/stores/broken/keys/key-1']) {
    const r = await node.request(path)
    expect(r.status).toBe(503)
    expect(json<{ error: { code: string } }>(r).error.code).toBe('RO_UNAVAILABLE')
    expectNothingDisclosed(path, r)
  }
  const mg = await node.request('/stores/broken/multi-get', { method: 'POST', body: encodeKeys(['key-1']) })
  expect(mg.status).toBe(503)
  expectNothingDisclosed('multi-get broken', mg)
  // The damaged record: 422 RO_CORRUPT, without the file it is in.
  let corrupt = 0
  for (let i = 0; i < KEYS; i++) {
    const r = await node.request(`/stores/damaged/keys/${keyName(i)}`)
    if (r.status === 200) continue
    expect(r.status).toBe(422)
    expect(json<{ error: { code: string } }>(r).error.code).toBe('RO_CORRUPT')
    expectNothingDisclosed(`damaged key ${i}`, r)
    corrupt++
  }
  expect(corrupt).toBe(1)
  // The console's views (public here: no read token) tell of all this, without the texts.
  for (const path of ['/ui/node.json', '/ui/cluster.json']) {
    const r = await node.request(path)
    expect(r.status).toBe(200)
    expectNothingDisclosed(path, r)
  }
  const events = json<{ events: { kind: string; store: string | null }[] }>(await node.request('/ui/node.json')).events
  expect(events.filter((e) => e.kind === 'corrupt-read' || e.kind === 'open-live-failed').map((e) => [e.kind, e.store])).toEqual([
    ['open-live-failed', 'broken'],
    ['corrupt-read', 'damaged'],
  ])
  // Admin routes without the token: 401, and just as quiet.
  const unauth = await node.request('/admin/status')
  expect(unauth.status).toBe(401)
  expectNothingDisclosed('/admin/status without a token', unauth)
})

test('GET /admin/status shows the operator what the public status does not', async () => {
  const r = await node.admin('GET', '/status')
  expect(r.status).toBe(200)
  const body = json<{
    node: { pid: number; dataDir: string; sourceFsCalls: { limit: number } }
    stores: { store: string; error?: string }[]
  }>(r)
  expect(body.node.pid).toBe(node.pid)
  expect(body.node.dataDir).toBe(dataDir)
  expect(body.node.sourceFsCalls.limit).toBeGreaterThanOrEqual(1)
  // The real reason the live version could not be opened, file and all.
  expect(body.stores.find((s) => s.store === 'broken')?.error).toContain(join(dataDir, 'broken', 'version-1'))
  // ...and the node's log has it too.
  expect(node.events().some((e) => e['event'] === 'open-live-failed' && String(e['error']).includes(dataDir))).toBe(true)
})
