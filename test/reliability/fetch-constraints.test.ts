import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Nginx } from '../../testkit/peers/nginx'
import { json, startSingleNode, type NodeProcess } from '../../testkit/cluster/node-process'
import { makeVersionDir, readEveryKey, reportFigures, versionDirsOf } from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * Promise 7 of docs/RELIABILITY.md: fetch sources are constrained. A node started with
 * --allowed-source (an nginx URL prefix and a local directory) refuses every fetch from
 * elsewhere, however the source is spelled (a sibling prefix, "..", percent-encoded dot
 * segments and slashes, another host name, a query, a symlink out of the allowed tree, an
 * unknown scheme): the job fails with RO_BAD_REQUEST, no request reaches the server, nothing
 * is staged, and no store is created. From an allowed source, a manifest naming anything but
 * this node's own chunk files (paths, "..", metadata.json, sub-directories, odd spellings) is
 * refused before any file is requested. Symlinks inside the allowed tree that lead out of
 * it (a node directory, a single file, metadata.json to /etc/passwd) are refused per file,
 * and install applies the same list to its path.
 * test/integration/fetcher/fetch-http.test.ts and
 * test/unit/fetcher/{open-source,manifest}.test.ts check the pieces; this goes through a
 * real node's fetch route.
 */

jest.setTimeout(60_000)
const tmp = makeTmp('rostore-fetch-constraints-')
const TOKEN = 'fetch-constraints-token-0123456789'
const STORE = 'users'
const KEYS = 100
let node: NodeProcess
let nginx: Nginx
let dataDir: string
const figures = {
  sourcesRefused: 0,
  sourcesAllowed: 0,
  manifestsRefused: 0,
  requestsThatReachedNginx: 0,
  symlinksRefused: 0,
  installsRefused: 0,
  installsAllowed: 0,
}

const www = (): string => join(tmp.dir, 'www')
const builds = (): string => join(tmp.dir, 'builds')
const storeDir = (): string => join(dataDir, STORE)

beforeAll(async () => {
  await makeVersionDir(join(www(), 'allowed', 'v1', 'node-0'), { store: STORE, version: 1, keys: KEYS })
  await makeVersionDir(join(www(), 'other', 'v2', 'node-0'), { store: STORE, version: 2, keys: KEYS })
  await makeVersionDir(join(www(), 'allowed-old', 'v3', 'node-0'), { store: STORE, version: 3, keys: KEYS })
  await makeVersionDir(join(builds(), 'allowed', 'v4', 'node-0'), { store: STORE, version: 4, keys: KEYS })
  await makeVersionDir(join(builds(), 'outside', 'v5', 'node-0'), { store: STORE, version: 5, keys: KEYS })
  symlinkSync(join(builds(), 'outside', 'v5'), join(builds(), 'allowed', 'link-out'))
  // Symlinks below an allowed root: a node directory, one data file, metadata.json, all leading out.
  mkdirSync(join(builds(), 'allowed', 'node-link'))
  symlinkSync(join(builds(), 'outside', 'v5', 'node-0'), join(builds(), 'allowed', 'node-link', 'node-0'))
  const v5 = join(builds(), 'outside', 'v5', 'node-0')
  const fileLink = join(builds(), 'allowed', 'file-link', 'node-0')
  mkdirSync(fileLink, { recursive: true })
  for (const name of readdirSync(v5)) {
    if (name.endsWith('.data')) symlinkSync(join(v5, name), join(fileLink, name))
    else writeFileSync(join(fileLink, name), readFileSync(join(v5, name)))
  }
  mkdirSync(join(builds(), 'allowed', 'passwd', 'node-0'), { recursive: true })
  symlinkSync('/etc/passwd', join(builds(), 'allowed', 'passwd', 'node-0', 'metadata.json'))
  await makeVersionDir(join(builds(), 'allowed', 'v6', 'node-0'), { store: STORE, version: 6, keys: KEYS })
  nginx = await Nginx.launch({ root: www() })
  dataDir = join(tmp.dir, 'data')
  node = await startSingleNode({
    dir: join(tmp.dir, 'node'),
    dataDir,
    token: TOKEN,
    keepVersions: 10,
    extraArgs: ['--allowed-source', `${nginx.url}allowed`, '--allowed-source', join(builds(), 'allowed')],
  })
})

afterAll(async () => {
  if (node?.running) await node.kill9()
  await nginx?.dispose()
  tmp.cleanup()
  const f = figures
  reportFigures(
    'fetch-constraints',
    `fetch-constraints: ${f.sourcesRefused} sources outside the allow-list refused, ${f.symlinksRefused} sources with symlinks leading out refused, ${f.sourcesAllowed} allowed sources fetched, ${f.manifestsRefused} manifests naming files outside the version directory refused; requests that reached nginx for refused sources or files: ${f.requestsThatReachedNginx}; installs: ${f.installsRefused} paths outside the allow-list refused, ${f.installsAllowed} allowed`,
    f,
  )
})

async function fetchJob(source: string, version?: number): Promise<Record<string, unknown>> {
  const r = await node.admin('POST', `/stores/${STORE}/fetch`, { source, ...(version === undefined ? {} : { version }) })
  expect(r.status).toBe(202)
  return node.waitJob(String(json(r)['id']), 30_000)
}

async function nginxHits(prefix: string): Promise<string[]> {
  return (await nginx.accessLog()).filter((e) => e.uri.startsWith(prefix)).map((e) => e.uri)
}

test('sources outside --allowed-source are refused before any request, nothing staged', async () => {
  const host = `127.0.0.1:${nginx.port}`
  const refused = [
    `${nginx.url}other/v2`,
    `${nginx.url}allowed-old/v3`,
    `${nginx.url}allowed/../other/v2`,
    `${nginx.url}allowed/%2e%2e/other/v2`,
    `${nginx.url}allowed/%2E%2E/other/v2`,
    `${nginx.url}allowed/..%2Fother/v2`,
    `${nginx.url}allowed%2F..%2Fother/v2`,
    `${nginx.url}allowed/v1%5C..%5C..%5Cother`,
    `http://localhost:${nginx.port}/allowed/v1`,
    `http://${host}@evil.example/allowed/v1`,
    // A query is no refusal: it is sent with every request and cannot change the path that is matched.
    `${nginx.url}allowed/v1#x=../../other`,
    `${nginx.url}allowed/v1#frag`,
    `https://${host}/allowed/v1`,
    `ftp://${host}/allowed/v1`,
    `gopher://${host}/allowed/v1`,
    join(builds(), 'outside', 'v5'),
    pathToFileURL(join(builds(), 'outside', 'v5')).href,
    `${join(builds(), 'allowed')}/../outside/v5`,
    join(builds(), 'allowed', 'link-out'),
    join(builds(), 'allowed-other'),
    'relative/builds/allowed/v4',
    '/',
  ]
  for (const source of refused) {
    const job = await fetchJob(source)
    expect({ source, state: job['state'], code: (job['error'] as { code?: string } | undefined)?.code }).toEqual({
      source,
      state: 'failed',
      code: 'RO_BAD_REQUEST',
    })
    figures.sourcesRefused++
  }
  const hits = [...(await nginxHits('/other/')), ...(await nginxHits('/allowed-old/'))]
  figures.requestsThatReachedNginx += hits.length
  expect(hits).toEqual([])
  // Refused before anything exists: no store directory, no store in the list.
  expect(existsSync(storeDir())).toBe(false)
  expect(json(await node.request('/stores'))).toEqual({ stores: [] })
  expect(node.events().filter((e) => e['event'] === 'store-opened')).toEqual([])
})

test('symlinks below an allowed root that lead out of it are refused per file, and nothing read is echoed', async () => {
  for (const source of ['node-link', 'file-link', 'passwd'].map((d) => join(builds(), 'allowed', d))) {
    const job = await fetchJob(source)
    const error = job['error'] as { code?: string; message?: string } | undefined
    expect({ source, state: job['state'], code: error?.code }).toEqual({ source, state: 'failed', code: 'RO_BAD_REQUEST' })
    expect(error?.message).toContain('symbolic link')
    // Named as requested, never where the link leads, never what is there.
    expect(error?.message).not.toContain(join(builds(), 'outside'))
    expect(error?.message).not.toMatch(/passwd:|root:|\/etc/)
    figures.symlinksRefused++
  }
  expect(existsSync(storeDir())).toBe(false)
})

test('install applies the allow-list to its path, with symlinks resolved', async () => {
  const install = async (path: string): Promise<Record<string, unknown>> => {
    const r = await node.admin('POST', `/stores/${STORE}/install`, { path })
    expect(r.status).toBe(202)
    return node.waitJob(String(json(r)['id']), 30_000)
  }
  for (const path of [
    join(builds(), 'outside', 'v5', 'node-0'),
    join(builds(), 'allowed', 'link-out', 'node-0'),
    join(builds(), 'allowed', 'node-link', 'node-0'),
    join(builds(), 'allowed', '..', 'outside', 'v5', 'node-0'),
    join(www(), 'allowed', 'v1', 'node-0'), // served by an allowed URL, but a path is not a URL
  ]) {
    const job = await install(path)
    expect({ path, state: job['state'], code: (job['error'] as { code?: string } | undefined)?.code }).toEqual({
      path,
      state: 'failed',
      code: 'RO_BAD_REQUEST',
    })
    figures.installsRefused++
  }
  expect(existsSync(storeDir())).toBe(false)
  expect(await install(join(builds(), 'allowed', 'v6', 'node-0'))).toMatchObject({ state: 'succeeded', result: { version: 6 } })
  figures.installsAllowed++
  expect(versionDirsOf(storeDir())).toEqual([6])
})

test('sources under --allowed-source are fetched, verified and served', async () => {
  for (const [source, version] of [
    [`${nginx.url}allowed/v1`, 1],
    [`${nginx.url}allowed/v1/../v1/`, undefined],
    [join(builds(), 'allowed', 'v4'), 4],
  ] as const) {
    if (version === undefined) {
      // The same build again, spelled with a ".." that stays inside: allowed, and a conflict.
      const job = await fetchJob(source)
      expect(job).toMatchObject({ state: 'failed', error: { code: 'RO_CONFLICT' } })
      continue
    }
    const job = await fetchJob(source, version)
    expect({ source, state: job['state'] }).toEqual({ source, state: 'succeeded' })
    figures.sourcesAllowed++
  }
  expect(versionDirsOf(storeDir())).toEqual([1, 4, 6])
  expect((await node.admin('POST', `/stores/${STORE}/swap`, { version: 4 })).status).toBe(200)
  expect(await readEveryKey(node, STORE, KEYS)).toBe(4)
})

test('a manifest naming files outside its version directory is refused before any file is requested', async () => {
  const good = JSON.parse(readFileSync(join(www(), 'allowed', 'v1', 'node-0', 'metadata.json'), 'utf8')) as {
    files: { name: string; size: number; checksum: string }[]
  } & Record<string, unknown>
  const names = [
    '../x',
    '../../../../../../etc/passwd',
    '/etc/passwd',
    'metadata.json',
    'sub/0.data',
    '0.data/../../x',
    '..',
    '.',
    '.0.data',
    '00.data',
    '0.data ',
    '0.DATA',
    '0.data\u0000',
    '%2e%2e%2fx',
    '..\\x',
    'node-1/0.data',
    '',
    '0.data.part',
    'LIVE',
  ]
  const manifests: [string, unknown][] = names.map((name) => [
    `name ${JSON.stringify(name)}`,
    { ...good, files: good.files.map((f, i) => (i === 0 ? { ...f, name } : f)) },
  ])
  manifests.push(['a name listed twice', { ...good, files: [...good.files.slice(0, -1), { ...good.files[0]! }] }])
  manifests.push(['a name that is not a string', { ...good, files: [{ ...good.files[0]!, name: ['0.data'] }, ...good.files.slice(1)] }])
  manifests.push(["another node's manifest", { ...good, nodeId: 7 }])
  manifests.push(["another store's manifest", { ...good, store: 'other' }])
  let k = 0
  for (const [what, manifest] of manifests) {
    const dir = join(www(), 'allowed', `evil-${k}`, 'node-0')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'metadata.json'), JSON.stringify(manifest))
    // Bait: files a path-following fetcher would find.
    writeFileSync(join(www(), 'allowed', `evil-${k}`, 'x'), 'bait')
    const job = await fetchJob(`${nginx.url}allowed/evil-${k}`)
    expect({ what, state: job['state'], code: (job['error'] as { code?: string } | undefined)?.code }).toEqual({
      what,
      state: 'failed',
      code: 'RO_BAD_REQUEST',
    })
    // The manifests only: the root's (a format-2 build has one there; this format-1 build
    // answers 404) and the node's. No file the manifest names is ever asked for.
    const manifests = [`/allowed/evil-${k}/metadata.json`, `/allowed/evil-${k}/node-0/metadata.json`]
    const hits = (await nginxHits(`/allowed/evil-${k}/`)).filter((u) => !manifests.includes(u))
    figures.requestsThatReachedNginx += hits.length
    expect({ what, hits }).toEqual({ what, hits: [] })
    figures.manifestsRefused++
    k++
  }
  // Nothing was written next to the versions or outside the data directory.
  expect(readdirSync(storeDir()).sort()).toEqual(['LIVE', 'version-1', 'version-4', 'version-6'])
  expect(readdirSync(dataDir)).toEqual([STORE])
  expect(await readEveryKey(node, STORE, KEYS)).toBe(4)
})
