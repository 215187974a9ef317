/**
 * The push rows of 4g (`--only cold`): a full new version (same records, version 2, the same
 * size) fetched by a node whose page cache holds the live version's hot set while Zipf
 * reads run, the node in a memory cgroup smaller than one version. Hot-read p99 and the
 * node's page-cache hit ratio before the push, while it fetches, verifies and prepares
 * (drop-behind I/O, the hot set carried to the new version), and after the swap.
 *
 * Beside the node, in every slice, Redis (an unrelated process on the same 2 cores) takes
 * paced GETs too: its p99 in the same slice says what the machine and the push's share of
 * it do to any server's tail, which the node's goal is not asked to beat.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeClusterFile, NodeProcess } from '../../testkit/cluster/node-process'
import { evictTree } from '../../testkit/stores/page-cache'
import { ensureDir, workRoot, type Dataset } from '../kit/data'
import { pacedRedisGets, startLoadedRedis } from '../peers/redis'
import { runPacedLoad, type PacedResult } from '../load/paced-load'
import type { LatencyHistogram } from '../load/latency-histogram'
import { artifactDir, rostoreBuild, STORE } from '../kit/rostore'
import { log } from '../kit/system'

const TOKEN = 'cold-push-admin-token-0123456789'
const CGROUP = '/sys/fs/cgroup/memory/rostore-bench-cold-push'

export interface PushPhase {
  readonly phase: 'before' | 'during' | 'after'
  readonly secs: number
  readonly requests: number
  readonly p99Ms: number
  /** The node's page-cache hit ratio over the phase (its /status counters). */
  readonly hitRatio: number | undefined
  /** Page cache charged to the node's cgroup at the phase's end. */
  readonly cacheBytes: number
  /** When the slice began (to read beside the node's log, bench/work/logs/cold-push-node.log). */
  readonly startedAt: string
  /** Redis's p99 over the same seconds (the peer); undefined when Redis is not here. */
  readonly peerP99Ms: number | undefined
  /**
   * Major page faults of the node's processes over the slice: a read of a page the node's
   * residency map still held resident but the cgroup had evicted waits for the disk on the
   * event loop.
   */
  readonly majorFaults: number
  /** `event-loop-stall` lines the node logged over the slice. */
  readonly stalls: number
  /**
   * Time the hypervisor took from each vCPU over the slice (/proc/stat's steal), ms: a
   * stolen vCPU stops whatever runs on it, node or peer, for that long.
   */
  readonly stolenMs: readonly number[]
  /** The node's and the peer's latencies, bucketed, to pool the slices of a phase. */
  readonly hist: LatencyHistogram | undefined
  readonly peerHist: LatencyHistogram | undefined
}

export interface PushRows {
  readonly phases: readonly PushPhase[]
  readonly limitBytes: number
  readonly rate: number
  readonly fetchSecs: number
  /** The push's `maxBytesPerSec`; undefined: unthrottled. */
  readonly maxBytesPerSec: number | undefined
  /** The peer's rate and records, or why it did not run. */
  readonly peer: { rate: number; records: number } | string
  /** What the node logged of carrying the hot set, when it did. */
  readonly carried: string
}

/** A version-2 build of the same records: the new version a push brings. */
async function ensureV2(ds: Dataset): Promise<string> {
  const dir = `${artifactDir(ds, 'rostore-none')}-v2`
  if (existsSync(join(dir, '.done'))) return join(dir, 'out')
  log('cold: building version 2 of the store for the push rows')
  const tmp = `${dir}.tmp`
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true })
  await rostoreBuild(ds, join(tmp, 'out'), { chunks: 1, version: 2 })
  writeFileSync(join(tmp, '.done'), new Date().toISOString())
  rmSync(dir, { recursive: true, force: true })
  renameSync(tmp, dir)
  return join(dir, 'out')
}

function treePids(pid: number): number[] {
  const out = [pid]
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const kids = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim()
      for (const k of kids === '' ? [] : kids.split(' ')) out.push(...treePids(Number(k)))
    }
  } catch {
    // gone
  }
  return out
}

/** Why the cgroup cannot be used here, or undefined once it is set up with `limit`. */
function setUpCgroup(limit: number): string | undefined {
  try {
    if (!existsSync('/sys/fs/cgroup/memory')) return 'no cgroup v1 memory controller on this machine'
    mkdirSync(CGROUP, { recursive: true })
    writeFileSync(join(CGROUP, 'memory.limit_in_bytes'), String(limit))
    return undefined
  } catch (err) {
    return `cannot set up ${CGROUP}: ${(err as Error).message}`
  }
}

function cgroupCache(): number {
  const m = /^cache (\d+)$/m.exec(readFileSync(join(CGROUP, 'memory.stat'), 'utf8'))
  return m ? Number(m[1]) : NaN
}

/** Major faults of the process tree under `pid` (/proc/<pid>/stat's 12th field, all threads). */
function majorFaults(pid: number): number {
  let sum = 0
  for (const p of treePids(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8')
      // Fields after the command name (which may hold spaces) start at state, the 3rd.
      sum += Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[9])
    } catch {
      // gone
    }
  }
  return sum
}

/** /proc/stat's steal of each vCPU, in clock ticks (USER_HZ, 100 per second on Linux). */
function stealTicks(): number[] {
  return readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .filter((l) => /^cpu\d+ /.test(l))
    .map((l) => Number(l.split(/\s+/)[8]))
}

function joinCgroup(pid: number): void {
  for (const p of treePids(pid)) writeFileSync(join(CGROUP, 'cgroup.procs'), String(p))
}

async function coldCounters(node: NodeProcess): Promise<{ version: number; lookups: number; cold: number }> {
  const st = JSON.parse((await node.request('/status')).body.toString()) as {
    stores: { store: string; version: number; coldReads: { lookups: number; coldLookups: number } | null }[]
  }
  const s = st.stores.find((x) => x.store === STORE)
  return { version: s?.version ?? 0, lookups: s?.coldReads?.lookups ?? 0, cold: s?.coldReads?.coldLookups ?? 0 }
}

export async function pushHotSetRows(
  ds: Dataset,
  liveNodeDir: string,
  quick: boolean,
  maxBytesPerSec?: number,
): Promise<PushRows | string> {
  const records = ds.shape.records
  const v2 = await ensureV2(ds)
  const limitBytes = (quick ? 1.5 : 3) * 2 ** 30
  const why = setUpCgroup(limitBytes)
  if (why) return why
  const root = ensureDir(join(workRoot(), 'cold-push'))
  execFileSync('rm', ['-rf', join(root, 'data')])
  const { path } = await writeClusterFile(root, { nodes: 1 })
  let node = await NodeProcess.start({
    clusterFile: path,
    nodeId: 0,
    dataDir: join(root, 'data'),
    token: TOKEN,
    port: 0,
    extraArgs: ['--resp-port', '0', '--resp-default-store', STORE],
    readyTimeoutMs: 120_000,
  })
  const rate = 8000
  const peerRate = 4000
  const phases: PushPhase[] = []
  let fetchSecs: number | undefined
  const peer = await startLoadedRedis('cold-push-redis')
  try {
    const inst = await node.admin('POST', `/stores/${STORE}/install`, { path: liveNodeDir, swap: true, link: true })
    if (inst.status !== 202) throw new Error(`install: ${inst.status} ${inst.body.toString()}`)
    const done = await node.waitJob(String((JSON.parse(inst.body.toString()) as { id: string }).id), 600_000)
    if (done['state'] !== 'succeeded') throw new Error(`install: ${JSON.stringify(done)}`)
    await node.sigterm()
    evictTree(join(root, 'data'))
    node = await node.restart()
    joinCgroup(node.pid)
    const slice = async (phase: PushPhase['phase'], secs: number): Promise<PacedResult> => {
      const startedAt = new Date().toISOString()
      const c0 = await coldCounters(node)
      const f0 = majorFaults(node.pid)
      const l0 = node.lines.length
      const s0 = stealTicks()
      const peerRun =
        typeof peer === 'string'
          ? undefined
          : pacedRedisGets(peer, { rate: peerRate, connections: 4, secs, kind: 'zipf', label: `push rows, ${phase}` })
      const res = await runPacedLoad(
        {
          port: node.respPort as number,
          store: STORE,
          records,
          seed: 5,
          rate,
          connections: 8,
          durationSec: secs,
          protocol: 'resp',
          kind: 'zipf',
        },
        1,
      )
      const peerRes = await peerRun
      if (res.errors > 0 || res.otherStatus > 0)
        throw new Error(`push rows, ${phase}: ${res.errors} errors, ${res.otherStatus} error replies`)
      const c1 = await coldCounters(node)
      // After a swap the new reader's counters start at zero.
      const lookups = c1.version === c0.version ? c1.lookups - c0.lookups : c1.lookups
      const cold = c1.version === c0.version ? c1.cold - c0.cold : c1.cold
      phases.push({
        phase,
        secs: res.secs,
        requests: res.requests,
        p99Ms: res.p99Ms,
        hitRatio: lookups > 0 ? 1 - cold / lookups : undefined,
        cacheBytes: cgroupCache(),
        startedAt,
        peerP99Ms: peerRes?.p99Ms,
        majorFaults: majorFaults(node.pid) - f0,
        stalls: node.lines.slice(l0).filter((l) => l.includes('event-loop-stall')).length,
        stolenMs: stealTicks().map((t, i) => (t - (s0[i] ?? t)) * 10),
        hist: res.hist,
        peerHist: peerRes?.hist,
      })
      return res
    }
    // Warm-up: one pass over the load's Zipf draws brings its hot set in.
    await slice('before', 200_000 / rate)
    phases.length = 0
    await slice('before', quick ? 8 : 15)

    const t0 = performance.now()
    const r = await node.admin('POST', `/stores/${STORE}/fetch`, {
      source: v2,
      version: 2,
      ...(maxBytesPerSec === undefined ? {} : { maxBytesPerSec }),
    })
    if (r.status !== 202) throw new Error(`fetch: ${r.status} ${r.body.toString()}`)
    const id = String((JSON.parse(r.body.toString()) as { id: string }).id)
    for (let n = 0; n < 200; n++) {
      await slice('during', 5)
      const job = JSON.parse((await node.admin('GET', `/jobs/${id}`)).body.toString()) as { state: string }
      if (job.state === 'failed') throw new Error(`fetch failed: ${JSON.stringify(job)}`)
      if (job.state !== 'running') break
    }
    const job = await node.waitJob(id, 600_000)
    if (job['state'] !== 'succeeded') throw new Error(`fetch: ${JSON.stringify(job)}`)
    fetchSecs = (performance.now() - t0) / 1000
    const s = await node.admin('POST', `/stores/${STORE}/swap`, { version: 2 })
    if (s.status !== 200) throw new Error(`swap: ${s.status} ${s.body.toString()}`)
    await slice('after', quick ? 8 : 15)
  } finally {
    await node.kill9()
    if (typeof peer !== 'string') peer.redis.stop()
    writeFileSync(join(ensureDir(join(workRoot(), 'logs')), 'cold-push-node.log'), `${node.lines.join('\n')}\n`)
  }
  const carried = node.lines.filter((l) => l.includes('hot-set-carried')).join(' ') || 'no hot-set-carried line in the node log'
  return {
    phases,
    limitBytes,
    rate,
    fetchSecs: fetchSecs ?? NaN,
    maxBytesPerSec,
    peer: typeof peer === 'string' ? peer : { rate: peerRate, records: peer.records },
    carried: carried.trim(),
  }
}
