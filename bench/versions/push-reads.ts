/**
 * Reads during a push, a section of push-bench.ts: one node serves
 * version 1 of N records of 100 B (10M, ~1.1 GB of data files; 1M with --quick) while a
 * probe process reads it one request at a time; then the node fetches, verifies and
 * installs version 2 of the same size (pushed from the local build output) and swaps to
 * it, under the same reads. Compared: the same reads without a push just before.
 *
 * Goals: no gap over 50 ms between two answers during the push; the push's p99 within
 * noise of the baseline's (here: at most 1.5x it, plus 0.1 ms).
 *
 * Then, not a goal, the same against a third version pushed with the push's fetch throttle
 * at THROTTLE_BYTES_PER_SEC (the rate the node's dumps default to beside live reads): what
 * the throttle buys the reads.
 */
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { loadCluster } from '../../cluster/cluster'
import { pushStore } from '../../client/push/push-store'
import { DEFAULT_STREAM_MAX_BYTES_PER_SEC } from '../../server/node-options'
import { NodeProcess, request, writeClusterFile } from '../../testkit/cluster/node-process'
import { DEFAULT_SEED, ensureDataset, ensureDir, label, shapes, workRoot } from '../kit/data'
import { p99WithinNoise, phaseRow, startReadProbe } from '../load/probe-client'
import type { PhaseStats } from '../load/read-probe'
import { rostoreBuild, STORE } from '../kit/rostore'
import { fmt, mdTable } from '../kit/stats'
import { log } from '../kit/system'

const TOKEN = 'push-reads-bench-token-0123456789'
const GAP_GOAL_MS = 50
/** The throttled push's fetch rate: the default node-wide rate of dump streams (server/node-options.ts). */
const THROTTLE_BYTES_PER_SEC = DEFAULT_STREAM_MAX_BYTES_PER_SEC

export interface PushReadsResult {
  readonly markdown: string
  readonly gapMet: boolean
  readonly p99Met: boolean
}

/** The build output of version `v` of the data set, built once and reused. */
async function buildOutput(records: number, v: number): Promise<string> {
  const ds = ensureDataset(shapes(records)[0]!, DEFAULT_SEED)
  const out = join(workRoot(), 'push-reads', `n${records}-v${v}`)
  if (existsSync(join(out, 'node-0', 'metadata.json'))) return out
  rmSync(out, { recursive: true, force: true })
  ensureDir(join(workRoot(), 'push-reads'))
  log(`push-reads: building version ${v} of ${label(records)} records`)
  await rostoreBuild(ds, out, { version: v })
  return out
}

async function lagMaxMs(url: string): Promise<number> {
  const m = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec((await request(`${url}/metrics`)).body.toString('utf8'))
  return m ? Number(m[1]) * 1000 : NaN
}

export async function runPushReads(opts: { quick: boolean; records?: number; baselineSec?: number }): Promise<PushReadsResult> {
  const records = opts.records ?? (opts.quick ? 1_000_000 : 10_000_000)
  const baselineSec = opts.baselineSec ?? (opts.quick ? 5 : 20)
  const v1 = await buildOutput(records, 1)
  const v2 = await buildOutput(records, 2)
  const v3 = await buildOutput(records, 3)
  const dir = join(workRoot(), 'push-reads', `node-${process.pid}`)
  rmSync(dir, { recursive: true, force: true })
  const { path } = await writeClusterFile(dir, { nodes: 1, partitionsPerNode: 1 })
  const cluster = await loadCluster(path)
  const node = await NodeProcess.start({ clusterFile: path, nodeId: 0, dataDir: join(dir, 'data'), token: TOKEN })
  try {
    const first = await pushStore({ cluster, store: STORE, from: v1, adminToken: TOKEN })
    if (first.status !== 'live') throw new Error(`push of version 1: ${first.status}`)
    const probe = startReadProbe({ port: node.port, store: STORE, records, seed: DEFAULT_SEED, maxSec: baselineSec + 3600 })
    probe.phase('warm-up')
    await new Promise((r) => setTimeout(r, 2000))
    await lagMaxMs(node.url)
    probe.phase('baseline')
    await new Promise((r) => setTimeout(r, baselineSec * 1000))
    const baseLag = await lagMaxMs(node.url)
    probe.phase('push')
    log(`push-reads: pushing version 2 under reads`)
    const t0 = performance.now()
    const pushed = await pushStore({ cluster, store: STORE, from: v2, adminToken: TOKEN })
    const pushSec = (performance.now() - t0) / 1000
    const pushLag = await lagMaxMs(node.url)
    if (pushed.status !== 'live') throw new Error(`push of version 2: ${pushed.status}`)
    probe.phase('throttled')
    log(`push-reads: pushing version 3 under reads, throttled to ${THROTTLE_BYTES_PER_SEC} B/s`)
    const t1 = performance.now()
    const throttled = await pushStore({ cluster, store: STORE, from: v3, adminToken: TOKEN, throttle: THROTTLE_BYTES_PER_SEC })
    const throttledSec = (performance.now() - t1) / 1000
    const throttledLag = await lagMaxMs(node.url)
    const phases = await probe.stop()
    if (throttled.status !== 'live') throw new Error(`throttled push of version 3: ${throttled.status}`)
    const base = phases['baseline'] as PhaseStats
    const during = phases['push'] as PhaseStats
    const slow = phases['throttled'] as PhaseStats
    const gapMet = during.maxGapMs <= GAP_GOAL_MS
    const { bound, met: p99Met } = p99WithinNoise(base, during)
    const row = (name: string, p: PhaseStats, lag: number): string[] => [
      ...phaseRow(name, p, ['s', 'reads', 'errors', 'p50', 'p99', 'p999', 'max', 'gap']),
      fmt(lag),
    ]
    const markdown = [
      `Reads during a push: one node serves ${label(records)} records of 100 B (version 1) to a probe process reading one key at a time over one keep-alive connection; ` +
        `then it fetches, verifies and installs version 2 of the same size from a local build output and swaps to it (${fmt(pushSec, 3)} s), under the same reads. ` +
        `Baseline: the same reads just before, for ${baselineSec} s. Event-loop delay: the node's nodejs_eventloop_lag_max_seconds over each phase.`,
      '',
      mdTable(
        [
          'phase',
          's',
          'reads',
          'errors',
          'p50 ms',
          'p99 ms',
          'p99.9 ms',
          'max ms',
          'largest gap between answers ms',
          'node event-loop delay max ms',
        ],
        [
          row('baseline (no push)', base, baseLag),
          row('during the push', during, pushLag),
          row(`during a push at ${fmt(THROTTLE_BYTES_PER_SEC / 1e6)} MB/s (${fmt(throttledSec, 3)} s)`, slow, throttledLag),
        ],
      ),
      '',
      `| goal | target | measured | status |`,
      `|---|---|---|---|`,
      `| reads during a push: largest gap | ≤ ${GAP_GOAL_MS} ms | ${fmt(during.maxGapMs)} ms | ${gapMet ? 'met' : 'missed'} |`,
      `| reads during a push: p99 | ≤ 1.5 × baseline + 0.1 ms (${fmt(bound)} ms) | ${fmt(during.p99Ms)} ms | ${p99Met ? 'met' : 'missed'} |`,
      '',
      `Not a goal: the same bound against a third version pushed with \`throttle: ${THROTTLE_BYTES_PER_SEC}\` (\`rostore push --throttle\`), ` +
        `the fetch rate a push can ask of each node.`,
      '',
      `| phase | p99 | largest gap | against the bound (${fmt(bound)} ms) |`,
      '|---|---|---|---|',
      `| push at ${fmt(THROTTLE_BYTES_PER_SEC / 1e6)} MB/s | ${fmt(slow.p99Ms)} ms | ${fmt(slow.maxGapMs)} ms | ${p99WithinNoise(base, slow).met ? 'within' : 'over'} |`,
      '',
    ].join('\n')
    return { markdown, gapMet, p99Met }
  } finally {
    await node.kill9()
    rmSync(dir, { recursive: true, force: true })
  }
}
