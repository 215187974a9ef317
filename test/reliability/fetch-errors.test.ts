import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { freePort } from '../../common/net'
import { json, startSingleNode, type NodeProcess } from '../../testkit/cluster/node-process'
import { makeVersionDir, reportFigures } from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * Against a real node with no allow-list.
 *
 * 6. A fetch job's error says what kind of failure it was, never what the source sent or
 *    what the node learned on the way: not the first bytes of a non-JSON file or page, not
 *    a redirect's Location, not a status text, not the address a host name resolved to.
 *    The detail is in the node's own log (job-finished "detail").
 * 7. A failed fetch or install of a store the node does not have leaves no store behind:
 *    refused requests never create it, failures after it was created drop it again, and
 *    `/stores` never lists it. A store that gets its version meanwhile stays.
 */

jest.setTimeout(90_000)
const tmp = makeTmp('rostore-fetch-errors-')
const TOKEN = 'fetch-errors-token-0123456789abcdef'
const CANARY = 'CANARY-7f3a'
let node: NodeProcess
let server: http.Server
let base: string
const figures = { failedFetches: 0, canariesInJobErrors: 0, canariesInLog: 0, storesLeftBehind: 0 }

/** A web server answering what a hostile or broken source might. */
function startServer(): Promise<http.Server> {
  const s = http.createServer((req, res) => {
    const url = req.url ?? ''
    if (url.startsWith('/redirect/')) {
      res.writeHead(302, { Location: `http://internal.${CANARY}.example/admin` })
      res.end()
    } else if (url.startsWith('/status-text/')) {
      res.writeHead(403, `Forbidden ${CANARY} internal`)
      res.end()
    } else if (url.startsWith('/non-json/')) {
      res.writeHead(200, { 'Content-Type': 'text/plain' })
      res.end(`root:x:0:0:${CANARY}:/root:/bin/bash\n`)
    } else if (url.startsWith('/html/')) {
      res.writeHead(200, { 'Content-Type': 'text/html' })
      res.end(`<html><title>${CANARY} admin console</title></html>`)
    } else if (url.startsWith('/json-other/')) {
      res.writeHead(200, { 'Content-Type': 'application/json' })
      res.end(JSON.stringify({ format: `${CANARY}-config`, secret: CANARY }))
    } else {
      res.writeHead(404)
      res.end()
    }
  })
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)))
}

async function fetchJob(store: string, source: string): Promise<Record<string, unknown>> {
  const r = await node.admin('POST', `/stores/${store}/fetch`, { source })
  expect(r.status).toBe(202)
  return node.waitJob(String(json(r)['id']), 60_000)
}

async function installJob(store: string, path: string): Promise<Record<string, unknown>> {
  const r = await node.admin('POST', `/stores/${store}/install`, { path })
  expect(r.status).toBe(202)
  return node.waitJob(String(json(r)['id']), 60_000)
}

beforeAll(async () => {
  server = await startServer()
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  node = await startSingleNode({ dir: join(tmp.dir, 'node'), dataDir: join(tmp.dir, 'data'), token: TOKEN, keepVersions: 5 })
})

afterAll(async () => {
  if (node?.running) await node.kill9()
  await new Promise((r) => server?.close(r))
  tmp.cleanup()
  const f = figures
  reportFigures(
    'fetch-errors',
    `fetch-errors: ${f.failedFetches} failed fetches and installs; canaries in job errors: ${f.canariesInJobErrors} (in the node log: ${f.canariesInLog}); stores left behind: ${f.storesLeftBehind}`,
    f,
  )
})

test('job errors name the kind of failure and echo nothing the source sent; the log keeps the detail', async () => {
  const local = join(tmp.dir, 'local-non-json')
  mkdirSync(join(local, 'node-0'), { recursive: true })
  writeFileSync(join(local, 'node-0', 'metadata.json'), `root:x:0:0:${CANARY}:/root:/bin/bash\n`)
  const closedPort = await freePort()
  const cases: [string, string, string, RegExp][] = [
    ['a local file that is not JSON', local, 'RO_FETCH_FAILED', /not valid JSON/],
    ['a page that is not JSON', `${base}/non-json/v1`, 'RO_FETCH_FAILED', /not valid JSON/],
    ['an HTML page', `${base}/html/v1`, 'RO_FETCH_FAILED', /not valid JSON/],
    ['JSON that is no manifest', `${base}/json-other/v1`, 'RO_BAD_REQUEST', /not a rostore manifest/],
    ['a redirect', `${base}/redirect/v1`, 'RO_FETCH_FAILED', /HTTP 302, a redirect \(not followed\)/],
    ['a status text', `${base}/status-text/v1`, 'RO_FETCH_FAILED', /HTTP 403$/],
    // "localhost" resolves to 127.0.0.1: the error must not say so.
    ['a closed port behind a host name', `http://localhost:${closedPort}/v1`, 'RO_FETCH_FAILED', /connection refused/],
  ]
  for (const [what, source, code, says] of cases) {
    const job = await fetchJob(`leak-${figures.failedFetches}`, source)
    const error = job['error'] as { code: string; message: string }
    expect({ what, state: job['state'], code: error.code }).toEqual({ what, state: 'failed', code })
    expect({ what, message: error.message }).toEqual({ what, message: expect.stringMatching(says) })
    const secrets = [CANARY, 'root:x', 'internal.', ...(source.includes('localhost') ? ['127.0.0.1'] : [])]
    for (const secret of secrets) {
      if (error.message.includes(secret)) figures.canariesInJobErrors++
      expect({ what, message: error.message }).toEqual({ what, message: expect.not.stringContaining(secret) })
    }
    figures.failedFetches++
  }
  // What was received is in the operator's log, not in the API.
  const details = node
    .events()
    .filter((e) => e['event'] === 'job-finished')
    .map((e) => String(e['detail'] ?? ''))
  // (JSON.parse quotes the first 10 bytes: "root:x:0:0"; the manifest check the field it read.)
  figures.canariesInLog = details.filter((d) => d.includes(CANARY) || d.includes('root:x:0:0')).length
  expect(figures.canariesInLog).toBeGreaterThanOrEqual(3)
})

test('failed fetches and installs of a new store leave no store behind', async () => {
  const www = join(tmp.dir, 'src')
  await makeVersionDir(join(www, 'good', 'node-0'), { store: 'fresh', version: 1, keys: 50 })
  const broken = await makeVersionDir(join(www, 'broken', 'node-0'), { store: 'fresh', version: 2, keys: 50 })
  // A manifest that passes, then a data file that is gone: the store was created, then must go.
  rmSync(
    join(
      broken,
      readdirSync(broken).find((n) => n.endsWith('.data'))!,
    ),
  )
  const failing: [string, () => Promise<Record<string, unknown>>][] = [
    ['an unsupported scheme', () => fetchJob('gone-scheme', 'ftp://127.0.0.1/builds')],
    ['a relative path', () => fetchJob('gone-relative', 'relative/path')],
    ['a source that does not exist', () => fetchJob('gone-missing', join(www, 'nope'))],
    ['a 404 source', () => fetchJob('gone-404', `${base}/nothing/here`)],
    ['a manifest for another store', () => fetchJob('gone-other', join(www, 'good'))],
    ['a data file that is missing', () => fetchJob('fresh', join(www, 'broken'))],
    ['an install of a directory that is no node directory', () => installJob('gone-install', www)],
    ['an install of another store', () => installJob('gone-install2', join(www, 'good', 'node-0'))],
  ]
  for (const [what, run] of failing) {
    const job = await run()
    expect({ what, state: job['state'] }).toEqual({ what, state: 'failed' })
    figures.failedFetches++
  }
  const stores = json<{ stores: { store: string }[] }>(await node.request('/stores')).stores.map((s) => s.store)
  const dirs = readdirSync(join(tmp.dir, 'data'))
  figures.storesLeftBehind = stores.length + dirs.length
  expect(stores).toEqual([])
  expect(dirs).toEqual([])
  // Refused before anything was created: never opened. Failed after: dropped again. (A
  // relative path is a valid source without an allow-list: resolved against the node's cwd.)
  const opened = node
    .events()
    .filter((e) => e['event'] === 'store-opened')
    .map((e) => e['store'])
  expect(opened).not.toContain('gone-scheme')
  expect(
    node
      .events()
      .filter((e) => e['event'] === 'store-dropped')
      .map((e) => e['store']),
  ).toContain('fresh')
  // The same store, fetched right: created, with its version, and kept.
  expect(await fetchJob('fresh', join(www, 'good'))).toMatchObject({ state: 'succeeded', result: { version: 1 } })
  expect(json<{ stores: { store: string }[] }>(await node.request('/stores')).stores.map((s) => s.store)).toEqual(['fresh'])
  // A failure on a store that has a version drops nothing.
  expect(await fetchJob('fresh', join(www, 'broken'))).toMatchObject({ state: 'failed' })
  expect(existsSync(join(tmp.dir, 'data', 'fresh', 'version-1'))).toBe(true)
})

test('a failing and a succeeding job for one new store at once: the store stays, with its version', async () => {
  const good = await makeVersionDir(join(tmp.dir, 'src2', 'pair', 'node-0'), { store: 'pair', version: 3, keys: 2000 })
  const [failing, succeeding] = await Promise.all([
    fetchJob('pair', `${base}/nothing/pair`),
    node.admin('POST', '/stores/pair/install', { path: good }).then((r) => node.waitJob(String(json(r)['id']), 60_000)),
  ])
  expect(failing).toMatchObject({ state: 'failed' })
  expect(succeeding).toMatchObject({ state: 'succeeded', result: { version: 3 } })
  expect(existsSync(join(tmp.dir, 'data', 'pair', 'version-3'))).toBe(true)
  expect(json<{ stores: { store: string }[] }>(await node.request('/stores')).stores.map((s) => s.store)).toEqual(['fresh', 'pair'])
})
