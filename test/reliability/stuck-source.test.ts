import { execFileSync } from 'node:child_process'
import { closeSync, constants, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { json, startSingleNode, type NodeProcess } from '../../testkit/cluster/node-process'
import { keyName, leftoversOf, makeVersionDir, reportFigures, sleep, versionValue, waitUntil } from '../../testkit/cluster/reliability-kit'
import { StallProxy } from '../../testkit/net/stall-proxy'
import { Nginx } from '../../testkit/peers/nginx'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * A fetch must never take the node down or starve its other work.
 * Before the fix, a source whose metadata.json was a FIFO blocked open() in a libuv pool
 * thread; the stall guard gave up, and when a writer finally opened the FIFO the file
 * source created a read stream with an aborted signal whose unhandled AbortError killed
 * the process. Four such fetches held all four pool threads and admin calls timed out; a
 * cancelled job stayed "running" until its stall timer fired.
 *
 * Here, against a real node (stall timeout 500 ms): FIFOs as manifest and as data file end
 * their jobs with a clear error without ever blocking; a writer opened on the FIFO past the
 * stall timeout finds no reader (the node holds none) and the node lives on; six such
 * fetches at once leave admin calls and an install working; a fetch stuck on a silent HTTP
 * source is cancelled and reaches "cancelled"; a reading client sees no error throughout.
 * The pool-thread bound itself (a call really stuck in the kernel) is shown by
 * test/integration/fetcher/fetch-stuck-source.test.ts.
 */

jest.setTimeout(90_000)
const tmp = makeTmp('rostore-stuck-node-')
const TOKEN = 'stuck-source-token-0123456789abcdef'
const STORE = 'users'
const KEYS = 100
let node: NodeProcess
let nginx: Nginx
const fifos: string[] = []
const figures = { fifoFetches: 0, crashes: 0, adminCallsDuring: 0, goodReads: 0, goodErrors: 0, cancelled: 0 }

let goodStop = false
let goodLoop: Promise<void> | undefined
const goodFailures: string[] = []
async function reader(): Promise<void> {
  for (let n = 0; !goodStop; n++) {
    const i = n % KEYS
    try {
      const r = await node.request(`/stores/${STORE}/keys/${keyName(i)}`, { timeoutMs: 5000 })
      if (r.status !== 200 || r.body.toString() !== versionValue(1, i)) goodFailures.push(`get ${i}: ${r.status}`)
      else figures.goodReads++
    } catch (err) {
      goodFailures.push((err as Error).message)
    }
    await sleep(5)
  }
}

function mkfifo(path: string): string {
  execFileSync('mkfifo', [path])
  fifos.push(path)
  return path
}

/** Opens a writer without blocking: true only if some process has the FIFO open for reading. */
function hasReader(fifo: string): boolean {
  try {
    closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK))
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENXIO') return false
    throw err
  }
}

/** A build output root whose node-0/metadata.json is a FIFO. */
function fifoManifestRoot(name: string): string {
  const root = join(tmp.dir, 'src', name)
  mkdirSync(join(root, 'node-0'), { recursive: true })
  mkfifo(join(root, 'node-0', 'metadata.json'))
  return root
}

async function fetchJob(store: string, source: string): Promise<string> {
  const r = await node.admin('POST', `/stores/${store}/fetch`, { source })
  expect(r.status).toBe(202)
  return String(json(r)['id'])
}

beforeAll(async () => {
  const v1 = await makeVersionDir(join(tmp.dir, 'src', 'v1', 'node-0'), { store: STORE, version: 1, keys: KEYS })
  await makeVersionDir(join(tmp.dir, 'src', 'v2', 'node-0'), { store: STORE, version: 2, keys: KEYS })
  node = await startSingleNode({
    dir: join(tmp.dir, 'node'),
    dataDir: join(tmp.dir, 'data'),
    token: TOKEN,
    keepVersions: 5,
    extraArgs: ['--fetch-stall-timeout-ms', '500'],
  })
  await node.install(STORE, v1, { swap: true })
  goodLoop = reader()
})

afterAll(async () => {
  goodStop = true
  await goodLoop
  for (const f of fifos) if (existsSync(f)) hasReader(f)
  if (node?.running) await node.kill9()
  await nginx?.dispose()
  tmp.cleanup()
  const f = figures
  reportFigures(
    'stuck-source',
    `stuck-source: ${f.fifoFetches} fetches from FIFO sources ended with an error, ${f.crashes} crashes, ${f.adminCallsDuring} admin calls answered meanwhile, ${f.cancelled} stuck fetch cancelled; the reading client read ${f.goodReads} keys with ${f.goodErrors} errors`,
    f,
  )
})

test('a FIFO metadata.json ends the job with a clear error, never blocks, and a late writer finds the node alive', async () => {
  const root = fifoManifestRoot('fifo-manifest')
  const job = await node.waitJob(await fetchJob(STORE, root), 20_000)
  expect(job).toMatchObject({ state: 'failed', error: { code: 'RO_FETCH_FAILED', message: expect.stringContaining('not a regular file') } })
  figures.fifoFetches++
  // A writer comes once the job has ended (the moment the old code crashed): nobody has the
  // FIFO open, because the node never blocked on it. A reader blocked in open() counts as
  // one for a writer's non-blocking open, so this needs no wait: the job's end is final.
  expect(hasReader(join(root, 'node-0', 'metadata.json'))).toBe(false)
  expect((await node.request('/health')).status).toBe(200)
  expect(node.running).toBe(true)
})

test('a FIFO as a data file named by a valid manifest is refused too', async () => {
  const good = join(tmp.dir, 'src', 'v2', 'node-0')
  const root = join(tmp.dir, 'src', 'fifo-data')
  mkdirSync(join(root, 'node-0'), { recursive: true })
  const meta = JSON.parse(readFileSync(join(good, 'metadata.json'), 'utf8')) as { files: { name: string }[] }
  for (const f of meta.files) copyFileSync(join(good, f.name), join(root, 'node-0', f.name))
  copyFileSync(join(good, 'metadata.json'), join(root, 'node-0', 'metadata.json'))
  const victim = meta.files.find((f) => f.name.endsWith('.data'))!.name
  rmSync(join(root, 'node-0', victim))
  mkfifo(join(root, 'node-0', victim))
  const job = await node.waitJob(await fetchJob(STORE, root), 20_000)
  expect(job).toMatchObject({ state: 'failed', error: { code: 'RO_FETCH_FAILED', message: expect.stringContaining('not a regular file') } })
  figures.fifoFetches++
  expect(hasReader(join(root, 'node-0', victim))).toBe(false)
})

test('six FIFO fetches at once: admin calls and an install keep working, every job ends', async () => {
  const ids = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => fetchJob(STORE, fifoManifestRoot(`many-${i}`))))
  // While they run (or right after): admin calls that need the node's disk and pool threads.
  for (let i = 0; i < 5; i++) {
    expect((await node.admin('GET', `/stores/${STORE}/versions`)).status).toBe(200)
    expect((await node.admin('GET', '/jobs')).status).toBe(200)
    figures.adminCallsDuring += 2
  }
  const installed = await node.install(STORE, join(tmp.dir, 'src', 'v2', 'node-0'))
  expect(installed).toMatchObject({ state: 'succeeded', result: { version: 2 } })
  figures.adminCallsDuring++
  for (const id of ids) {
    expect(await node.waitJob(id, 20_000)).toMatchObject({ state: 'failed', error: { code: 'RO_FETCH_FAILED' } })
    figures.fifoFetches++
  }
  expect(node.running).toBe(true)
})

test('a fetch from a source gone silent is cancelled: the job reaches "cancelled" and leaves nothing', async () => {
  const www = join(tmp.dir, 'www')
  await makeVersionDir(join(www, 'v3', 'node-0'), { store: STORE, version: 3, keys: 2000 })
  nginx = await Nginx.launch({ root: www })
  // The source answers the manifest, then goes silent on every data file.
  const proxy = await StallProxy.start(nginx.port, { stallAfterBytes: 100, only: /\.data/ })
  try {
    const id = await fetchJob(STORE, `${proxy.url}v3`)
    expect(await waitUntil(async () => proxy.connections > 1, 10_000)).toBe(true)
    const c = await node.admin('POST', `/jobs/${id}/cancel`)
    expect(c.status).toBe(202)
    expect(await node.waitJob(id, 10_000)).toMatchObject({ state: 'cancelled', error: { code: 'RO_ABORTED' } })
    figures.cancelled++
    expect(existsSync(join(tmp.dir, 'data', STORE, 'version-3'))).toBe(false)
    expect(leftoversOf(join(tmp.dir, 'data', STORE))).toEqual([])
  } finally {
    await proxy.close()
  }
})

test('the node never crashed and the reading client saw no error', async () => {
  // Progress, not a rate: the reader must have kept reading (however slow the machine).
  const readsBefore = figures.goodReads
  expect(await waitUntil(() => figures.goodReads >= readsBefore + 20, 30_000)).toBe(true)
  goodStop = true
  await goodLoop
  figures.goodErrors = goodFailures.length
  expect(goodFailures).toEqual([])
  figures.crashes = node.running ? 0 : 1
  expect(node.running).toBe(true)
  expect((await node.request('/health')).status).toBe(200)
})
