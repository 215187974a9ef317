import { existsSync, writeFileSync } from 'node:fs'
import { buildVersion, numberedRecords } from './build-version'
import { join } from 'node:path'
import { loadCluster, type Cluster } from '../../cluster/cluster'
import { ClusterAdmin } from '../../client/cluster-admin'
import { pushStore } from '../../client/push/push-store'
import { ChaosReader } from './chaos-reader'
import { CliProcess } from './cli-process'
import { FaultProxy, type LinkSide, type ProxyMode } from '../net/fault-proxy'
import { Nginx } from '../peers/nginx'
import { freePort, NodeProcess, writeClusterFile } from './node-process'
import { leftoversOf, pick, randomInt, seededRandom, sleep, waitUntil } from './reliability-kit'

/**
 * A Jepsen-style run against a real 3-node cluster (replication 2): pushes and rollbacks by
 * real `rostore` CLI processes, one fault per operation at a seeded random moment (kill -9
 * of the CLI, kill -9 and restart of a node; a random node's links cut or stalled through
 * the proxies in front of every node's HTTP and RESP ports: all of them, the pusher's
 * only, or all but the pusher's (its peers' and the readers'); a node's disk writes made
 * slow; or none), continuous checked reads (chaos-reader.ts), and after each operation a checker:
 * a client that read a version never reads an older one (but across a rollback);
 * the nodes converge on one version without operator action, within 30 s, and it is the
 * old or the new one; a new version live was decided commit on every node, an old one was
 * not; nothing staged is left. The same seed replays the same choices.
 */

export const CHAOS_FAULTS = [
  'none',
  'kill-pusher',
  'kill-pusher',
  'kill-node',
  'stall-node',
  'cut-node',
  'stall-pusher-link',
  'cut-pusher-link',
  'stall-peer-links',
  'cut-peer-links',
  'slow-disk',
] as const
const STORE = 'chaos'
/** The link faults: the victim's proxies' mode, and whose connections it hits. */
const LINK_FAULTS: Record<
  Exclude<(typeof CHAOS_FAULTS)[number], 'none' | 'kill-pusher' | 'kill-node' | 'slow-disk'>,
  [ProxyMode, LinkSide]
> = {
  'stall-node': ['stall', 'all'],
  'cut-node': ['cut', 'all'],
  'stall-pusher-link': ['stall', 'pusher'],
  'cut-pusher-link': ['cut', 'pusher'],
  'stall-peer-links': ['stall', 'others'],
  'cut-peer-links': ['cut', 'others'],
}
const TOKEN = 'chaos-token-0123456789abcdef'
const CONVERGE_MS = 30_000

export interface ChaosReport {
  readonly seed: number
  readonly runs: number
  readonly pushes: number
  readonly rollbacks: number
  readonly faults: Record<string, number>
  /** Operations whose new version went live everywhere / that left the old one. */
  readonly committed: number
  readonly kept: number
  /** Of those kept, operations with no fault injected (a liveness figure: they should go live). */
  readonly keptWithoutFault: number
  readonly reads: number
  readonly readErrors: number
  readonly regressionsDuringSwaps: number
  readonly slowestConvergeMs: number
  /** Complete versions a dead push fetched and nobody removed (a node restarted in between). */
  readonly unusedVersionsLeft: number
  readonly violations: readonly string[]
}

export async function runChaos(o: {
  dir: string
  seed: number
  runs: number
  keys?: number
  /** No new operation starts after this time (ms since the epoch): the run stays bounded on a busy machine. */
  until?: number
  log?: (m: string) => void
}): Promise<ChaosReport> {
  const log = o.log ?? (() => undefined)
  const keys = o.keys ?? 300
  const rand = seededRandom(o.seed)
  const { path: clusterFile, cluster: spec } = await writeClusterFile(join(o.dir, 'c'), { nodes: 3, partitionsPerNode: 3, resp: true })
  const cluster: Cluster = await loadCluster(clusterFile)
  // Every node listens on other ports than cluster.json's, where a proxy of the run stands.
  const real = await Promise.all(spec.nodes.map(async () => ({ port: await freePort(), respPort: await freePort() })))
  const proxies = await Promise.all(
    spec.nodes.map(async (n, id) => [
      await FaultProxy.start(n.port, real[id]!.port),
      await FaultProxy.start(n.respPort!, real[id]!.respPort),
    ]),
  )
  const slowDisk = (id: number): string => join(o.dir, `slow-disk-${id}`)
  const www = join(o.dir, 'www')
  const nginx = await Nginx.launch({ root: www })
  const dataDir = (id: number): string => join(o.dir, `data-${id}`)
  const startNode = (id: number): Promise<NodeProcess> =>
    NodeProcess.start({
      clusterFile,
      nodeId: id,
      dataDir: dataDir(id),
      token: TOKEN,
      keepVersions: 4,
      workers: 1,
      port: real[id]!.port,
      env: { ROSTORE_TEST_SLOW_DISK: slowDisk(id) },
      extraArgs: ['--peer-check-grace-ms', '2000', '--resp-port', String(real[id]!.respPort)],
    })
  const nodes: NodeProcess[] = await Promise.all([0, 1, 2].map(startNode))
  const admin = new ClusterAdmin(cluster, TOKEN, 3000)
  const build = async (v: number): Promise<void> => {
    await buildVersion({
      dir: o.dir,
      cluster,
      store: STORE,
      version: v,
      records: numberedRecords(keys, (i) => `v${v}-${i}`),
      output: join(www, `v${v}`),
    })
  }
  const report = {
    seed: o.seed,
    runs: 0,
    pushes: 0,
    rollbacks: 0,
    faults: {} as Record<string, number>,
    committed: 0,
    kept: 0,
    keptWithoutFault: 0,
    slowestConvergeMs: 0,
    unusedVersionsLeft: 0,
  }
  const violations: string[] = []
  let reader: ChaosReader | undefined
  try {
    await build(1)
    await pushStore({ cluster, store: STORE, from: `${nginx.url}/v1`, adminToken: TOKEN })
    let live = 1
    let next = 2
    const history = [1]
    reader = new ChaosReader(cluster, STORE, keys, seededRandom(o.seed + 1))
    reader.allowed = new Set([1])
    await reader.start()
    for (let run = 0; run < o.runs; run++) {
      if (o.until !== undefined && Date.now() > o.until) {
        log(`time budget spent after ${run} operations`)
        break
      }
      report.runs = run + 1
      const before = live
      // Every choice is drawn each run in the same order, so a seed replays the same
      // choices (what they meet still depends on timing: which pushes went live).
      const wantRollback = rand() < 0.25
      const rollbackTo = history.filter((v) => v < live).at(-1)
      const isRollback = wantRollback && rollbackTo !== undefined && (await heldEverywhere(admin, rollbackTo))
      const target = isRollback ? rollbackTo : next++
      if (!isRollback) await build(target)
      const fault = pick(rand, CHAOS_FAULTS)
      const delay = randomInt(rand, 0, 1500)
      const victim = randomInt(rand, 0, 2)
      const pause = randomInt(rand, 200, 3000)
      report.faults[fault] = (report.faults[fault] ?? 0) + 1
      if (isRollback) report.rollbacks++
      else report.pushes++
      const what = `run ${run} (seed ${o.seed}): ${isRollback ? 'rollback' : 'push'} ${before} -> ${target}, fault ${fault} at ${delay} ms`
      log(what)
      reader.allowed = new Set([before, target])
      reader.watchRegressions = !isRollback
      if (isRollback) reader.resetMonotonic()
      const args = isRollback
        ? ['rollback', '--to', String(target)]
        : ['push', '--from', `${nginx.url}/v${target}`, '--lease', '3', '--timeout', '60']
      const cli = new CliProcess([...args, '--cluster', clusterFile, '--store', STORE], { token: TOKEN })
      for (const p of proxies.flat()) p.pusherPid = cli.child.pid
      const exited = cli.done.then(() => true)
      const injected = (async () => {
        if (await Promise.race([exited, sleep(delay).then(() => false)])) return
        if (fault === 'kill-pusher') await cli.kill9()
        else if (fault === 'kill-node') {
          await nodes[victim]!.kill9()
          await sleep(pause / 3)
          nodes[victim] = await nodes[victim]!.restart()
        } else if (fault === 'slow-disk') {
          // Each fsync and atomic rename of the victim waits, until the operation is over.
          writeFileSync(slowDisk(victim), String(Math.round(pause / 4)))
          await exited
          writeFileSync(slowDisk(victim), '0')
        } else if (fault !== 'none') {
          const [mode, side] = LINK_FAULTS[fault]
          for (const p of proxies[victim]!) p.set(mode, side)
          await sleep(pause)
          for (const p of proxies[victim]!) p.set('pass')
        }
      })()
      const finished = await within(exited, 120_000)
      for (const p of proxies.flat()) p.pusherPid = undefined
      if (!finished) {
        violations.push(`${what}: the CLI did not finish in 120 s`)
        await cli.kill9()
      }
      await injected
      for (let id = 0; id < 3; id++) if (!nodes[id]!.running) nodes[id] = await nodes[id]!.restart()
      const t0 = Date.now()
      const converged = await waitUntil(() => convergedOn(admin), CONVERGE_MS + 15_000, 100)
      const took = Date.now() - t0
      report.slowestConvergeMs = Math.max(report.slowestConvergeMs, took)
      const lives = await livesOf(admin)
      if (!converged) {
        violations.push(`${what}: no convergence in ${CONVERGE_MS + 15_000} ms: lives ${lives.join(', ')}; CLI: ${cli.stderr.slice(-600)}`)
        break
      }
      if (took > CONVERGE_MS) violations.push(`${what}: converged after ${took} ms`)
      live = lives[0]!
      if (live !== before && live !== target) violations.push(`${what}: converged on ${live}`)
      if (live === target && live !== before) {
        report.committed++
        if (!isRollback) history.push(target)
      } else {
        report.kept++
        if (fault === 'none') report.keptWithoutFault++
      }
      for (let id = 0; id < 3; id++) {
        const d = await admin.node(id).decisions(STORE)
        const commitOf = d.decisions.some((e) => e.version === target && e.outcome === 'commit')
        if (live === target && live !== before && !commitOf)
          violations.push(`${what}: node ${id} serves ${target} without a commit decision`)
        if (live === before && !isRollback && commitOf)
          violations.push(`${what}: node ${id} holds commit for ${target} but serves ${before}`)
        const storeDir = join(dataDir(id), STORE)
        if (!(await waitUntil(() => leftoversOf(storeDir).length === 0, 10_000, 100)))
          violations.push(`${what}: node ${id} left staged files ${leftoversOf(storeDir).join(', ')}`)
        if (live === before && !isRollback && !(await waitUntil(() => !existsSync(join(storeDir, `version-${target}`)), 5000, 100)))
          report.unusedVersionsLeft++
      }
      // From here on every node serves `live`: any read that starts now must be of it.
      reader.allowed = new Set([live])
      if (isRollback) reader.resetMonotonic()
      await reader.more(4)
      if (violations.length > 0) break
    }
    await reader.stop()
    violations.push(...reader.violations.map((v) => `seed ${o.seed}: ${v}`))
    return { ...report, reads: reader.reads, readErrors: reader.readErrors, regressionsDuringSwaps: reader.regressions, violations }
  } finally {
    await reader?.stop().catch(() => undefined)
    admin.close()
    await Promise.all(nodes.map((n) => (n.running ? n.kill9() : Promise.resolve(undefined))))
    await Promise.all(proxies.flat().map((p) => p.close()))
    await nginx.dispose()
  }
}

async function livesOf(admin: ClusterAdmin): Promise<(number | null)[]> {
  return Promise.all(
    admin.ids.map((id) =>
      admin
        .node(id)
        .versions(STORE)
        .then(
          (v) => v.live,
          () => null,
        ),
    ),
  )
}

/** Every node answers, serves the same version, has no push prepared and no lease held. */
async function convergedOn(admin: ClusterAdmin): Promise<boolean> {
  try {
    const states = await Promise.all(
      admin.ids.map(async (id) => {
        const n = admin.node(id)
        const [v, d, lock] = await Promise.all([n.versions(STORE), n.decisions(STORE), n.lockInfo(STORE)])
        return { live: v.live, prepared: d.prepared !== null, locked: lock !== undefined }
      }),
    )
    return states.every((s) => s.live === states[0]!.live && !s.prepared && !s.locked)
  } catch {
    return false
  }
}

async function heldEverywhere(admin: ClusterAdmin, v: number): Promise<boolean> {
  const held = await Promise.all(
    admin.ids.map((id) =>
      admin
        .node(id)
        .versions(STORE)
        .then(
          (x) => x.versions.some((y) => y.version === v),
          () => false,
        ),
    ),
  )
  return held.every(Boolean)
}

/** `p`'s value, or false after `ms` (the timer is cleared either way, so nothing outlives the run). */
async function within(p: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)))])
  } finally {
    clearTimeout(timer)
  }
}
