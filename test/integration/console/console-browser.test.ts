import { randomBytes } from 'node:crypto'
import { statSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, Page } from 'puppeteer-core'
import { buildStore } from '../../../builder/engines/local/build-job'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { pushStore, type PushResult } from '../../../client/push/push-store'
import { rollbackCluster } from '../../../client/push/rollback'
import { StoreClient } from '../../../client/store-client'
import { launchChromium, recordRequests, screenshot, SCREENSHOT_DIR } from '../../../testkit/peers/browser'
import { writeInput } from '../../../testkit/stores/input-files'
import { Nginx } from '../../../testkit/peers/nginx'
import { json, NodeProcess, request, writeClusterFile } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

// A real Chromium against a live 3-node cluster: what an operator sees at /ui.
jest.setTimeout(60_000)
const tmp = makeTmp()
const adminToken = 'console-admin-token-0123456789'
const readToken = 'console-read-token-0123456789'
let nodes: NodeProcess[] = []
let cluster: Cluster
let nginx: Nginx
let browser: Browser
let page: Page
let requests: string[] = []
/** Script errors and console errors of the page (a CSP violation is one). */
const pageErrors: string[] = []
/** Bytes of the biggest node directory of v2: the throttled push takes a few seconds at a sixth of it per second. */
let v2NodeBytes = 0

async function buildVersion(v: number, records: number): Promise<void> {
  const input = join(tmp.dir, `in-${v}.tsv`)
  // Random values: the build cannot compress them away, so the fetch has bytes to move.
  const value = (i: number) => (records > 1000 ? randomBytes(40).toString('hex') : `v${v}-${i}`)
  await writeInput(
    input,
    'tsv',
    Array.from({ length: records }, (_, i) => [`key-${i}`, value(i)] as [string, string]),
  )
  await buildStore({
    inputs: [input],
    format: 'tsv',
    cluster,
    store: 'st',
    output: join(tmp.dir, 'www', `v${v}`),
    version: v,
    replication: 2,
    chunks: 2,
    workers: 1,
    // Sized per node directory below.
    layout: 'nodes',
  })
}

function dirBytes(dir: string): number {
  return readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0)
}

const origin = () => `http://127.0.0.1:${nodes[0]!.port}`

/** Waits, bounded, for the page's DOM to say `expr` (a function body over `document`). */
async function waitDom(expr: string, timeout = 10_000): Promise<void> {
  await page.waitForFunction(expr, { timeout, polling: 100 })
}

const upCount = `document.querySelectorAll('#nodes [data-state="up"]').length`
const liveEverywhere = (v: number) => `document.querySelectorAll('tr[data-store="st"][data-live="${v}"]').length === 3`

beforeAll(async () => {
  const file = await writeClusterFile(tmp.dir, { nodes: 3, partitionsPerNode: 3 })
  cluster = await loadCluster(file.path)
  const env = { ROSTORE_READ_TOKEN: readToken }
  // Node 0, the page's origin, runs serving workers: its console views are forwarded to its supervisor.
  nodes = await Promise.all(
    [0, 1, 2].map((id) =>
      NodeProcess.start({
        clusterFile: file.path,
        nodeId: id,
        dataDir: join(tmp.dir, `data-${id}`),
        token: adminToken,
        workers: id === 0 ? 2 : 1,
        env,
      }),
    ),
  )
  await buildVersion(1, 300)
  await buildVersion(2, 40_000)
  v2NodeBytes = Math.max(...[0, 1, 2].map((id) => dirBytes(join(tmp.dir, 'www', 'v2', `node-${id}`))))
  nginx = await Nginx.launch({ root: join(tmp.dir, 'www') })
  browser = await launchChromium()
  page = await browser.newPage()
  await page.setViewport({ width: 1280, height: 900 })
  requests = recordRequests(page)
  page.on('pageerror', (err) => void pageErrors.push(String(err)))
  page.on('console', (m) => {
    // The 401s the token test provokes are logged by the browser; they are expected.
    if (m.type() === 'error' && !/status of 401/.test(m.text())) pageErrors.push(m.text())
  })
})

afterAll(async () => {
  await browser?.close()
  await Promise.all(nodes.map((n) => (n.running ? n.kill9() : Promise.resolve(undefined))))
  await nginx?.dispose()
  tmp.cleanup()
})

test('the page is served with a strict CSP; its views need the read token and show no paths or secrets', async () => {
  const page0 = await request(`${origin()}/ui`)
  expect(page0.status).toBe(200)
  expect(page0.headers['content-security-policy']).toContain("script-src 'self'")
  expect(page0.headers['content-security-policy']).toContain("default-src 'none'")
  expect(page0.body.toString()).not.toMatch(/<script>|\son[a-z]+=/)
  expect((await request(`${origin()}/ui/cluster.json`)).status).toBe(401)
  expect((await request(`${origin()}/ui/node.json`, { headers: { Authorization: 'Bearer wrong-token-123' } })).status).toBe(401)
  await pushStore({ cluster, store: 'st', from: `${nginx.url}/v1?X-Amz-Signature=secret-sig`, adminToken, readToken })
  const r = await request(`${origin()}/ui/cluster.json`, { headers: { Authorization: `Bearer ${readToken}` } })
  expect(r.status).toBe(200)
  const text = r.body.toString()
  const view = json<{ nodes: { id: number; up: boolean; view: { stores: { live: number }[] } }[] }>(r)
  expect(view.nodes.map((n) => [n.id, n.up, n.view.stores[0]?.live])).toEqual([
    [0, true, 1],
    [1, true, 1],
    [2, true, 1],
  ])
  for (const secret of [tmp.dir, adminToken, readToken, 'secret-sig', nginx.url]) expect(text).not.toContain(secret)
})

test('the read token is asked for, a wrong one is refused, the right one opens every node and store version', async () => {
  await page.goto(`${origin()}/ui`)
  await waitDom(`document.body.dataset.status === 'token' && !document.getElementById('token-form').hidden`)
  await page.type('#token', 'not-the-read-token')
  await page.click('#token-form button')
  await waitDom(`document.body.dataset.status === 'refused' && !document.getElementById('token-error').hidden`)
  await screenshot(page, 'console-refused')
  await page.type('#token', readToken)
  await page.click('#token-form button')
  await waitDom(`document.body.dataset.status === 'ok' && ${upCount} === 3 && ${liveEverywhere(1)}`)
  expect(await page.$$eval('#nodes [data-node-id]', (cards) => cards.map((c) => c.getAttribute('data-node-id')))).toEqual(['0', '1', '2'])
  await screenshot(page, 'console-cluster')
})

test('a throttled push shows per-node fetch progress that moves, then the new version everywhere', async () => {
  const throttle = Math.max(16 * 1024, Math.floor(v2NodeBytes / 6))
  const pushed: Promise<PushResult> = pushStore({ cluster, store: 'st', from: `${nginx.url}/v2`, adminToken, readToken, throttle })
  // Reads while the push fetches, so the nodes' read rates show on the page (a bounded loop).
  const client = await StoreClient.connect({ cluster, store: 'st', readToken, timeoutMs: 5000 })
  const keys = Array.from({ length: 300 }, (_, i) => `key-${i}`)
  const reads = (async () => {
    for (let i = 0; i < 40; i++) expect((await client.getMany(keys)).filter((v) => v !== undefined).length).toBe(300)
  })()
  const running = `[...document.querySelectorAll('.job[data-kind="fetch"][data-state="running"]')]`
  await waitDom(`${running}.length === 3`)
  const first = await page.evaluate(`${running}.map((j) => Number(j.dataset.percent))`)
  expect(await page.evaluate(`${running}.map((j) => j.querySelector('.job-title').textContent.endsWith('fetch st → v2'))`)).toEqual([
    true,
    true,
    true,
  ])
  // Some node's bar moves past where it was (bounded: the fetch ends in a few seconds).
  await waitDom(
    `${running}.some((j) => Number(j.dataset.percent) > ${Math.min(...(first as number[]))} && Number(j.dataset.percent) > 0)`,
    15_000,
  )
  await waitDom(`[...document.querySelectorAll('#nodes [data-state="up"] dd')].some((d) => /^[1-9][0-9.]*\\/s$/.test(d.textContent))`)
  await screenshot(page, 'console-push')
  await reads
  client.close()
  expect((await pushed).status).toBe('live')
  await waitDom(liveEverywhere(2))
  await waitDom(`${running}.length === 0`)
})

test('a rollback shows in the events of every node', async () => {
  const r = await rollbackCluster({ cluster, store: 'st', adminToken })
  expect(r.to).toBe(1)
  await waitDom(`${liveEverywhere(1)} && document.querySelectorAll('#events li[data-kind="rollback"]').length === 3`)
  const texts = await page.$$eval('#events li[data-kind="rollback"] .ev-text', (els) => els.map((e) => e.textContent))
  expect(texts).toEqual(['rolled back to v1 (was v2)', 'rolled back to v1 (was v2)', 'rolled back to v1 (was v2)'])
  await screenshot(page, 'console-rollback')
})

test('a node swapped alone shows the store as mixed, its row marked, until it is back; a stale node is marked', async () => {
  expect((await nodes[0]!.admin('POST', '/stores/st/swap', { version: 2 })).status).toBe(200)
  await waitDom(`document.querySelector('.store[data-store="st"] [data-mixed="true"]') !== null`)
  const marked = await page.$$eval('tr.problem[data-store="st"]', (rows) => rows.map((r) => r.getAttribute('data-node')))
  expect(marked).toEqual(['0'])
  await screenshot(page, 'console-mixed')
  // A stale mark (its reason is free text: the console shows only that there is one).
  expect((await nodes[1]!.admin('PUT', '/stores/st/stale', { reason: 'operator note <b>x</b>' })).status).toBe(200)
  const row1 = `document.querySelector('tr[data-store="st"][data-node="1"]')`
  await waitDom(`${row1}.classList.contains('problem') && ${row1}.textContent.includes('stale')`)
  expect(await page.evaluate(`document.body.textContent.includes('operator note')`)).toBe(false)
  expect((await nodes[1]!.admin('DELETE', '/stores/st/stale')).status).toBe(200)
  expect((await nodes[0]!.admin('POST', '/stores/st/swap', { version: 1 })).status).toBe(200)
  await waitDom(`${liveEverywhere(1)} && document.querySelector('[data-mixed="true"]') === null`)
})

test('a killed node shows as down within 10 s, and up again when restarted (phone screen)', async () => {
  await page.setViewport({ width: 390, height: 844, isMobile: true })
  await nodes[2]!.kill9()
  await waitDom(`document.querySelector('#nodes [data-node-id="2"]')?.dataset.state === 'down'`, 10_000)
  await waitDom(`document.querySelector('tr[data-store="st"][data-node="2"]')?.textContent.includes('down')`)
  await screenshot(page, 'console-node-down-phone')
  nodes[2] = await nodes[2]!.restart()
  await waitDom(`${upCount} === 3 && ${liveEverywhere(1)}`, 20_000)
  await page.setViewport({ width: 1280, height: 900 })
})

test('every request the page made went to the node it was loaded from, and nothing failed in the page', () => {
  expect(pageErrors).toEqual([])
  expect(requests.length).toBeGreaterThan(5)
  const foreign = requests.filter((u) => new URL(u).origin !== origin())
  expect(foreign).toEqual([])
  expect(requests.filter((u) => u.endsWith('/ui/cluster.json')).length).toBeGreaterThan(3)
  process.stderr.write(`console screenshots in ${SCREENSHOT_DIR}\n`)
})
