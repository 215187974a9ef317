import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { verifyStore } from '../../formats/store/scan/verify'
import { Nginx } from '../../testkit/peers/nginx'
import { json, startSingleNode, type NodeProcess } from '../../testkit/cluster/node-process'
import {
  BIG_VERSIONS,
  faultSeed,
  leftoversOf,
  makeVersionDir,
  pick,
  randomInt,
  readEveryKey,
  reportFigures,
  seededRandom,
  sleep,
  versionDirsOf,
  waitUntil,
} from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * Promise 3 of docs/RELIABILITY.md: crashes lose nothing. A real `rostore serve` is killed
 * with SIGKILL during a fetch (from nginx, throttled to take about a second), a swap, a
 * rollback and a retention clean-up, either exactly at one of the swapper's crash points
 * (ROSTORE_CRASH_AT) or at a random moment of a busy loop. The plan (which operation, which
 * point, which delay) comes from a seeded generator. After every kill the node is
 * restarted and must serve exactly one complete version (every key, through HTTP, from that
 * one version), the version LIVE names, with no .tmp-/.trash- leftovers and every version
 * directory on disk passing verifyStore.
 *
 * test/integration/server/lifecycle/crash-recovery.test.ts covers each crash point once, in a fixed
 * scenario; this adds fetches, randomness and the full checks after every restart.
 */

jest.setTimeout(60_000)
const tmp = makeTmp('rostore-crash-')
const SEED = faultSeed(7_2024)
const rand = seededRandom(SEED)
const TOKEN = 'crash-reliability-token-0123456789'
const STORE = 'users'
const KEYS = 300
/** Small versions installed from local directories. */
const SMALL = [1, 2, 3, 4, 5]
const FETCH_RATE = 3 << 20 // ~3 MB per big version: about a second per fetch

type Op = 'fetch' | 'swap' | 'rollback' | 'retention'
const POINTS: Record<Op, readonly string[]> = {
  fetch: ['install:verified', 'install:renamed'],
  swap: ['swap:opened', 'pointer:temp-written', 'pointer:renamed', 'swap:flipped'],
  rollback: ['swap:opened', 'pointer:temp-written', 'pointer:renamed', 'swap:flipped'],
  retention: ['retention:trashed', 'delete:trashed'],
}
const PER_OP = 6
const PLAN: { op: Op; point?: string; delayMs?: number }[] = (() => {
  const ops: Op[] = (['fetch', 'swap', 'rollback', 'retention'] as const).flatMap((op) => Array<Op>(PER_OP).fill(op))
  for (let i = ops.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    ;[ops[i], ops[j]] = [ops[j]!, ops[i]!]
  }
  return ops.map((op) =>
    rand() < 0.5
      ? { op, point: pick(rand, POINTS[op]) }
      : { op, delayMs: op === 'fetch' ? randomInt(rand, 50, 1300) : randomInt(rand, 20, 400) },
  )
})()

const figures = {
  seed: SEED,
  iterations: 0,
  faultsInjected: 0,
  crashPointKills: 0,
  randomKills: 0,
  fetchesKilledMidTransfer: 0,
  byOp: {} as Record<string, number>,
  restarts: 0,
  versionsVerified: 0,
  keysRead: 0,
  liveAfter: [] as string[],
}

let node: NodeProcess
let nginx: Nginx
let dataDir: string
const src: Record<number, string> = {}
let nextBig = BIG_VERSIONS + 1
const storeDir = (): string => join(dataDir, STORE)

beforeAll(async () => {
  for (const v of SMALL) src[v] = await makeVersionDir(join(tmp.dir, 'src', `v${v}`), { store: STORE, version: v, keys: KEYS })
  // Big versions, one per fetch of the plan, served by nginx as build outputs.
  const fetches = PLAN.filter((p) => p.op === 'fetch').length
  for (let k = 1; k <= fetches; k++)
    await makeVersionDir(join(tmp.dir, 'www', `v${BIG_VERSIONS + k}`, 'node-0'), { store: STORE, version: BIG_VERSIONS + k, keys: KEYS })
  nginx = await Nginx.launch({ root: join(tmp.dir, 'www') })
  dataDir = join(tmp.dir, 'data')
  mkdirSync(join(tmp.dir, 'node'), { recursive: true })
  node = await startSingleNode({ dir: join(tmp.dir, 'node'), dataDir, token: TOKEN, keepVersions: 5 })
  await node.install(STORE, src[1]!, { swap: true })
})

afterAll(async () => {
  if (node?.running) await node.kill9()
  await nginx?.dispose()
  tmp.cleanup()
  const f = figures
  reportFigures(
    'crash',
    `crash: ${f.iterations} iterations (seed ${f.seed}), ${f.faultsInjected} kill -9 injected (${f.crashPointKills} at crash points, ${f.randomKills} at random moments; ${Object.entries(
      f.byOp,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(
        ', ',
      )}; ${f.fetchesKilledMidTransfer} fetches cut before their version existed), ${f.restarts} restarts, ${f.versionsVerified} version directories verified, ${f.keysRead} keys read after restarts, 0 lost`,
    f,
  )
})

async function admin(method: string, path: string, body?: object): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await node.admin(method, `/stores/${STORE}${path}`, body)
  return { status: r.status, body: r.body.length > 0 ? json(r) : {} }
}

async function present(): Promise<{ live: number | null; versions: number[] }> {
  const r = await admin('GET', '/versions')
  return { live: r.body['live'] as number | null, versions: (r.body['versions'] as { version: number }[]).map((v) => v.version) }
}

/** Installs the small versions in `want` that are missing and makes `live` live. */
async function ensure(want: readonly number[], live: number): Promise<void> {
  const have = await present()
  for (const v of want) if (!have.versions.includes(v)) await node.install(STORE, src[v]!)
  const r = await admin('POST', '/swap', { version: live })
  if (r.status !== 200) throw new Error(`swap to ${live}: ${r.status} ${JSON.stringify(r.body)}`)
}

/** Restart with these options (crash point, keep-versions); counts restarts. */
async function restart(opts: { point?: string; keep?: number } = {}): Promise<void> {
  node = await node.restart({ env: opts.point ? { ROSTORE_CRASH_AT: opts.point } : {}, keepVersions: opts.keep ?? 5 })
  figures.restarts++
}

/**
 * After a kill: restart clean and check that one complete version is served, the one LIVE
 * names, among `allowed`; no leftovers; every version directory verifies.
 */
async function checkRecovered(allowed: readonly number[]): Promise<number> {
  await restart()
  const v = await readEveryKey(node, STORE, KEYS)
  figures.keysRead += KEYS
  expect(allowed).toContain(v)
  expect(readFileSync(join(storeDir(), 'LIVE'), 'utf8').trim()).toBe(String(v))
  const status = json<{ stores: { store: string; version: number; stale: boolean }[] }>(await node.request('/status'))
  expect(status.stores).toEqual([expect.objectContaining({ store: STORE, version: v, stale: false })])
  // Recovery removed the debris before listening; retention may still be finishing.
  expect(await waitUntil(() => leftoversOf(storeDir()).length === 0, 5000)).toBe(true)
  for (const d of versionDirsOf(storeDir())) {
    const report = await verifyStore(join(storeDir(), `version-${d}`))
    expect(report.records).toBe(KEYS)
    figures.versionsVerified++
  }
  figures.liveAfter.push(`v${v}`)
  return v
}

/** Sends admin calls in a loop until the node dies; errors are expected once it is killed. */
function busyLoop(step: (i: number) => Promise<unknown>): Promise<void> {
  return (async () => {
    for (let i = 0; node.running; i++) await step(i)
  })().catch(() => undefined)
}

async function killAfter(ms: number): Promise<void> {
  await sleep(ms)
  await node.kill9()
  figures.randomKills++
}

async function expectCrashAt(point: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const exit = await Promise.race([node.exited, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), 15_000)))])
  clearTimeout(timer)
  if (exit === undefined) throw new Error(`the node did not reach crash point ${point}:\n${node.logText(30)}`)
  expect(exit.signal).toBe('SIGKILL')
  expect(node.events().some((e) => e['event'] === 'crash-point' && e['point'] === point)).toBe(true)
  figures.crashPointKills++
}

test.each(PLAN.map((p, i) => [i, p.op, p.point ?? `random kill after ${p.delayMs} ms`, p] as const))(
  '#%i %s: %s',
  async (_i, op, _what, p) => {
    figures.iterations++
    figures.faultsInjected++
    figures.byOp[op] = (figures.byOp[op] ?? 0) + 1
    let allowed: number[]

    if (op === 'fetch') {
      const live = (await present()).live ?? 1
      const big = nextBig++
      const fetch = () => admin('POST', '/fetch', { source: `${nginx.url}v${big}`, swap: true, maxBytesPerSec: FETCH_RATE })
      if (p.point) {
        await restart({ point: p.point })
        const r = await fetch()
        expect(r.status).toBe(202)
        await expectCrashAt(p.point)
      } else {
        expect((await fetch()).status).toBe(202)
        await killAfter(p.delayMs!)
      }
      allowed = [live, big]
      await checkRecovered(allowed)
      if (!versionDirsOf(storeDir()).includes(big)) figures.fetchesKilledMidTransfer++
      return
    } else if (op === 'swap') {
      const [a, b] = [pick(rand, SMALL), pick(rand, SMALL)]
      const to = a === b ? (a % SMALL.length) + 1 : b
      await ensure([a, to], a)
      if (p.point) {
        await restart({ point: p.point })
        await admin('POST', '/swap', { version: to }).catch(() => undefined)
        await expectCrashAt(p.point)
        allowed = [a, to]
      } else {
        const targets = [a, to]
        const loop = busyLoop((i) => admin('POST', '/swap', { version: targets[i % 2] }))
        await killAfter(p.delayMs!)
        await loop
        allowed = targets
      }
    } else if (op === 'rollback') {
      const older = randomInt(rand, 1, 4)
      const live = randomInt(rand, older + 1, 5)
      await ensure([older, live], live)
      const backups = (await present()).versions.filter((v) => v < live)
      if (p.point) {
        await restart({ point: p.point })
        await admin('POST', '/rollback', {}).catch(() => undefined)
        await expectCrashAt(p.point)
        allowed = [live, Math.max(...backups)]
      } else {
        // Roll back, then forward again, and again: the kill lands anywhere in a flip.
        const loop = busyLoop(async (i) => (i % 2 === 0 ? admin('POST', '/rollback', {}) : admin('POST', '/swap', { version: live })))
        await killAfter(p.delayMs!)
        await loop
        allowed = [live, Math.max(...backups)]
      }
    } else {
      if (p.point === 'retention:trashed') {
        // Three versions, the middle one live; keeping one backup deletes nothing yet. The
        // swap to the newest makes the oldest a victim: the node dies with it in the trash.
        await ensure([2, 3, 4], 3)
        const before = (await present()).versions
        const oldest = Math.min(...before)
        for (const v of before) if (v !== 3 && v !== 4 && v !== oldest) await admin('DELETE', `/versions/${v}`)
        await restart({ point: p.point, keep: 1 })
        await admin('POST', '/swap', { version: 4 }).catch(() => undefined)
        await expectCrashAt(p.point)
        allowed = [4]
      } else if (p.point === 'delete:trashed') {
        await ensure([1, 2], 2)
        await restart({ point: p.point })
        await admin('DELETE', '/versions/1').catch(() => undefined)
        await expectCrashAt(p.point)
        allowed = [2]
      } else {
        // keep-versions 0: every swap deletes the versions older than the new live one, and
        // the loop installs them again (or swaps to them when retention kept them as newer).
        const liveBefore = (await present()).live
        await restart({ keep: 0 })
        const loop = busyLoop(async (i) => {
          const v = SMALL[i % SMALL.length]!
          const r = await admin('POST', '/install', { path: src[v], swap: true })
          const job = r.status === 202 ? await node.waitJob(String(r.body['id'])) : undefined
          if (job?.['state'] !== 'succeeded') await admin('POST', '/swap', { version: v })
        })
        await killAfter(p.delayMs! * 2)
        await loop
        // The kill may come before the loop's first swap.
        allowed = liveBefore === null ? SMALL : [...SMALL, liveBefore]
      }
    }
    await checkRecovered(allowed)
  },
)
