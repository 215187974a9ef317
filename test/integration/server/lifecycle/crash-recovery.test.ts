import { cpSync, existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { json, NodeProcess, startSingleNode, writeClusterFile } from '../../../../testkit/cluster/node-process'
import { decodeValues, encodeKeys } from '../../../../formats/wire/multiget'
import { verifyStore } from '../../../../formats/store/scan/verify'
import { KEY_COUNT, keyOf, leftovers, makeVersions, STORE, storeEntries, versionOfValue } from '../fixture'

const TOKEN = 'crash-test-token-0123456789'

/** Every key read in one multi-get: all present, all of one version; returns it. */
async function servedVersion(node: NodeProcess): Promise<number> {
  const keys = Array.from({ length: KEY_COUNT }, (_, i) => keyOf(i))
  const r = await node.request(`/stores/${STORE}/multi-get`, { method: 'POST', body: encodeKeys(keys) })
  if (r.status !== 200) throw new Error(`multi-get ${r.status}: ${r.body.toString()}`)
  const versions = new Set(decodeValues(r.body, keys.length).map((v, i) => (v === undefined ? undefined : versionOfValue(v.toString(), i))))
  expect([...versions]).toHaveLength(1)
  const v = [...versions][0]
  expect(v).toBe(Number(r.headers['x-rostore-version']))
  return v as number
}

interface Scenario {
  readonly name: string
  readonly point: string
  /** Versions installed before (live = last of `live`), keep-versions. */
  readonly installed: readonly number[]
  readonly live: number
  readonly keep?: number
  /** The operation that crashes the node. */
  readonly op: (node: NodeProcess, src: Record<number, string>) => Promise<unknown>
  /** Versions acceptable as live after the restart, and the version directories expected. */
  readonly after: readonly number[]
  readonly dirs?: readonly number[]
  /** The crash leaves a .tmp-* or .trash-* entry for recovery to remove. */
  readonly debris?: boolean
}

const swapTo = (v: number) => (node: NodeProcess) => node.admin('POST', `/stores/${STORE}/swap`, { version: v })
const rollback = () => (node: NodeProcess) => node.admin('POST', `/stores/${STORE}/rollback`)
const install = (v: number) => (node: NodeProcess, src: Record<number, string>) =>
  node.admin('POST', `/stores/${STORE}/install`, { path: src[v] })

const SCENARIOS: Scenario[] = [
  { name: 'install, files copied', point: 'install:staged', debris: true, installed: [1], live: 1, op: install(2), after: [1], dirs: [1] },
  { name: 'install, verified', point: 'install:verified', debris: true, installed: [1], live: 1, op: install(2), after: [1], dirs: [1] },
  { name: 'install, renamed', point: 'install:renamed', installed: [1], live: 1, op: install(2), after: [1], dirs: [1, 2] },
  { name: 'swap, new reader open', point: 'swap:opened', installed: [1, 2], live: 1, op: swapTo(2), after: [1], dirs: [1, 2] },
  {
    name: 'swap, temp pointer written',
    point: 'pointer:temp-written',
    debris: true,
    installed: [1, 2],
    live: 1,
    op: swapTo(2),
    after: [1],
    dirs: [1, 2],
  },
  { name: 'swap, pointer renamed', point: 'pointer:renamed', installed: [1, 2], live: 1, op: swapTo(2), after: [2], dirs: [1, 2] },
  { name: 'swap, flipped before memory', point: 'swap:flipped', installed: [1, 2], live: 1, op: swapTo(2), after: [2], dirs: [1, 2] },
  { name: 'rollback, new reader open', point: 'swap:opened', installed: [1, 2], live: 2, op: rollback(), after: [2], dirs: [1, 2] },
  {
    name: 'rollback, temp pointer written',
    point: 'pointer:temp-written',
    debris: true,
    installed: [1, 2],
    live: 2,
    op: rollback(),
    after: [2],
    dirs: [1, 2],
  },
  { name: 'rollback, pointer renamed', point: 'pointer:renamed', installed: [1, 2], live: 2, op: rollback(), after: [1], dirs: [1, 2] },
  {
    name: 'retention, old version in trash',
    point: 'retention:trashed',
    debris: true,
    installed: [1, 2, 3],
    live: 2,
    keep: 1,
    op: swapTo(3),
    after: [3],
    dirs: [2, 3],
  },
  {
    name: 'delete, version in trash',
    point: 'delete:trashed',
    debris: true,
    installed: [1, 2],
    live: 2,
    op: (node) => node.admin('DELETE', `/stores/${STORE}/versions/1`),
    after: [2],
    dirs: [2],
  },
]

describe('kill -9 at every step of install, swap, rollback, retention, delete', () => {
  const tmp = makeTmp('rostore-crash-')
  let src: Record<number, string>
  /** A prepared data directory per (installed, live) state, copied for each scenario. */
  const templates = new Map<string, string>()
  const running: NodeProcess[] = []

  beforeAll(async () => {
    src = await makeVersions(tmp.dir, [1, 2, 3])
  })
  afterAll(async () => {
    await Promise.all(running.filter((n) => n.running).map((n) => n.kill9()))
    tmp.cleanup()
  })

  async function prepared(installed: readonly number[], live: number): Promise<string> {
    const key = `${installed.join('-')}@${live}`
    let dir = templates.get(key)
    if (!dir) {
      dir = join(tmp.dir, `template-${key}`)
      const n = await startSingleNode({ dir: mkdir(join(tmp.dir, `prep-${key}`)), dataDir: dir, token: TOKEN, keepVersions: 5 })
      running.push(n)
      for (const v of installed) await n.install(STORE, src[v]!)
      expect((await n.admin('POST', `/stores/${STORE}/swap`, { version: live })).status).toBe(200)
      expect((await n.sigterm()).code).toBe(0)
      templates.set(key, dir)
    }
    return dir
  }

  test.each(SCENARIOS.map((s) => [s.name, s] as const))('%s', async (_name, s) => {
    const dataDir = join(tmp.dir, `case-${s.point}-${s.name.replace(/\W+/g, '-')}`)
    cpSync(await prepared(s.installed, s.live), dataDir, { recursive: true })
    const dir = mkdir(`${dataDir}-cluster`)
    const { path } = await writeClusterFile(dir)
    const node = await NodeProcess.start({
      clusterFile: path,
      nodeId: 0,
      dataDir,
      token: TOKEN,
      port: 0,
      keepVersions: s.keep ?? 5,
      env: { ROSTORE_CRASH_AT: s.point },
    })
    running.push(node)
    expect(await servedVersion(node)).toBe(s.live)
    // The operation's request may fail (connection reset) or, for jobs, answer 202 first.
    await s.op(node, src).catch(() => undefined)
    const exit = await node.exited
    expect(exit.signal).toBe('SIGKILL')
    expect(node.events().some((e) => e['event'] === 'crash-point' && e['point'] === s.point)).toBe(true)
    if (s.debris) expect(leftovers(dataDir).length).toBeGreaterThan(0)

    const again = await node.restart({ env: {} })
    running.push(again)
    const v = await servedVersion(again)
    expect(s.after).toContain(v)
    // Leftovers of the interrupted step are gone, and retention is re-applied.
    await waitFor(() => leftovers(dataDir).length === 0 && (s.dirs === undefined || sameDirs(dataDir, s.dirs)))
    expect(leftovers(dataDir)).toEqual([])
    if (s.dirs) expect(storeEntries(dataDir).filter((n) => n.startsWith('version-'))).toEqual(s.dirs.map((d) => `version-${d}`))
    // Every version directory left is complete and verifies.
    for (const d of storeEntries(dataDir).filter((n) => n.startsWith('version-'))) await verifyStore(join(dataDir, STORE, d))
    const status = json<{ stores: { version: number }[] }>(await again.request('/status'))
    expect(status.stores[0]?.version).toBe(v)
    expect((await again.sigterm()).code).toBe(0)
  })

  test('kill -9 at random moments of a busy swap/install loop: restart serves one complete version', async () => {
    const dataDir = join(tmp.dir, 'random')
    cpSync(await prepared([1, 2], 2), dataDir, { recursive: true })
    const { path } = await writeClusterFile(mkdir(join(tmp.dir, 'random-cluster')))
    let node = await NodeProcess.start({ clusterFile: path, nodeId: 0, dataDir, token: TOKEN, port: 0, keepVersions: 1 })
    running.push(node)
    for (let round = 0; round < 6; round++) {
      const busy = (async () => {
        for (let i = 0; ; i++) {
          await node.admin('POST', `/stores/${STORE}/install`, { path: src[3] })
          await node.admin('POST', `/stores/${STORE}/swap`, { version: 1 + (i % 3) })
          await node.admin('POST', `/stores/${STORE}/rollback`)
          await node.admin('DELETE', `/stores/${STORE}/versions/${1 + ((i + 1) % 3)}`)
          await node.admin('POST', `/stores/${STORE}/install`, { path: src[1 + ((i + 1) % 3)] })
        }
      })().catch(() => undefined)
      await new Promise((r) => setTimeout(r, 30 + Math.random() * 250))
      await node.kill9()
      await busy
      node = await node.restart()
      running.push(node)
      const v = await servedVersion(node)
      expect([1, 2, 3]).toContain(v)
      await waitFor(() => leftovers(dataDir).length === 0)
      for (const d of storeEntries(dataDir).filter((n) => n.startsWith('version-'))) {
        expect(existsSync(join(dataDir, STORE, d, 'metadata.json'))).toBe(true)
      }
    }
    expect((await node.sigterm()).code).toBe(0)
  })
})

function mkdir(dir: string): string {
  mkdirSync(dir, { recursive: true })
  return dir
}

function sameDirs(dataDir: string, dirs: readonly number[]): boolean {
  const have = storeEntries(dataDir).filter((n) => n.startsWith('version-'))
  return JSON.stringify(have) === JSON.stringify(dirs.map((d) => `version-${d}`))
}

async function waitFor(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
}
