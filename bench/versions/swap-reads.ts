/**
 * Reads during swaps: a probe process reads one key at a time from a store of
 * `records` 100-byte values while the node swaps that store back and forth (swap to 2,
 * rollback to 1) `swaps` times, against a baseline of the same length without swaps, same
 * run. Goal: the p99 during the swaps within noise of the baseline (1.5 × + 0.1 ms).
 *
 * Two more phases put that bound against this machine: the same swaps with a pause of
 * PACE_MS after each, and, with no swap at all, the bench process pinging a process that
 * has nothing to do with rostore (echo-server.ts) at the same pace. Neither is a goal; they
 * say what the probe's p99 does when other processes wake up now and then.
 */
import { fork } from 'node:child_process'
import { Agent, request } from 'node:http'
import { join } from 'node:path'
import { makeNodeDir } from '../../testkit/stores/make-store'
import { json, type NodeProcess } from '../../testkit/cluster/node-process'
import { sleep } from '../../testkit/cluster/reliability-kit'
import { DEFAULT_SEED, keyOf, valueOf } from '../kit/data'
import { p99WithinNoise, phaseRow, startReadProbe } from '../load/probe-client'
import type { PhaseStats } from '../load/read-probe'
import { fmt, mdTable } from '../kit/stats'

const STORE = 'reads'
/** Pause after each paced swap and each ping. */
const PACE_MS = 50
/** Bound on one ping's round trip; the echo server is on loopback. */
const PING_TIMEOUT_MS = 10_000

export interface SwapReads {
  readonly markdown: string
}

async function installVersion(node: NodeProcess, dir: string, version: number, records: number): Promise<void> {
  function* pairs(): Generator<[string, Buffer]> {
    for (let i = 0; i < records; i++) yield [keyOf(i), valueOf(i, 100, DEFAULT_SEED + version)]
  }
  await makeNodeDir(dir, pairs(), { store: STORE, version, chunks: 2 })
  const r = await node.admin('POST', `/stores/${STORE}/install`, { path: dir, link: true })
  const job = await node.waitJob(String(json(r)['id']), 600_000)
  if (job['state'] !== 'succeeded') throw new Error(`install ${STORE} v${version}: ${JSON.stringify(job)}`)
}

async function adminOk(node: NodeProcess, path: string, body: object): Promise<void> {
  const r = await node.admin('POST', path, body)
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.body.toString()}`)
}

async function swapOrRollback(node: NodeProcess, i: number): Promise<void> {
  if (i % 2 === 0) await adminOk(node, `/stores/${STORE}/swap`, { version: 2 })
  else await adminOk(node, `/stores/${STORE}/rollback`, {})
}

/** `count` small JSON POSTs to a fresh echo server process, PACE_MS apart, over one keep-alive connection. */
async function pingUnrelatedProcess(count: number): Promise<void> {
  const child = fork(join(__dirname, '..', 'load', 'echo-server.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m: { port: number }) => resolve(m.port))
      child.once('exit', (code) => reject(new Error(`echo server exited with ${code}`)))
    })
    for (let i = 0; i < count; i++) {
      await new Promise<void>((resolve, reject) => {
        const body = JSON.stringify({ ping: i })
        const req = request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/',
            agent,
            timeout: PING_TIMEOUT_MS,
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            res.resume()
            res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`echo server answered ${res.statusCode}`))))
          },
        )
        req.on('timeout', () => req.destroy(new Error('echo server did not answer')))
        req.on('error', reject)
        req.end(body)
      })
      await sleep(PACE_MS)
    }
  } finally {
    agent.destroy()
    child.kill()
  }
}

export async function readsDuringSwaps(node: NodeProcess, root: string, records: number, swaps: number): Promise<SwapReads> {
  for (const v of [1, 2]) await installVersion(node, join(root, `${STORE}-v${v}`), v, records)
  await adminOk(node, `/stores/${STORE}/swap`, { version: 1 })
  const probe = startReadProbe({ port: node.port, store: STORE, records, seed: DEFAULT_SEED, maxSec: 1800 })
  probe.phase('warm-up')
  await new Promise((r) => setTimeout(r, 2000))
  // The swaps first, timed, so that the baseline after them lasts as long.
  probe.phase('swaps')
  const t0 = performance.now()
  for (let i = 0; i < swaps; i++) await swapOrRollback(node, i)
  const swapSec = (performance.now() - t0) / 1000
  probe.phase('baseline')
  await sleep(Math.max(3, swapSec) * 1000)
  probe.phase('paced')
  for (let i = 0; i < swaps; i++) {
    await swapOrRollback(node, i)
    await sleep(PACE_MS)
  }
  probe.phase('pings')
  await pingUnrelatedProcess(swaps)
  const phases = await probe.stop()
  const base = phases['baseline'] as PhaseStats
  const during = phases['swaps'] as PhaseStats
  const paced = phases['paced'] as PhaseStats
  const pings = phases['pings'] as PhaseStats
  const { bound, met } = p99WithinNoise(base, during)
  const row = (name: string, p: PhaseStats): string[] => phaseRow(name, p, ['s', 'reads', 'errors', 'p50', 'p99', 'max', 'gap'])
  const against = (name: string, p: PhaseStats): string =>
    `| ${name} | ${fmt(p.p99Ms)} ms | ${p99WithinNoise(base, p).met ? 'within' : 'over'} |`
  const markdown = [
    `## Reads during ${swaps} swaps`,
    '',
    `One node (default workers) serves ${records.toLocaleString('en-US')} records of 100 B in two versions; a probe process reads one key at a time ` +
      `over one keep-alive connection (90% present keys) while the node swaps the store to version 2 and rolls it back, ${swaps} times in all ` +
      `(${fmt(swapSec, 3)} s), then for as long again without swaps (baseline).`,
    '',
    mdTable(
      ['phase', 's', 'reads', 'errors', 'p50 ms', 'p99 ms', 'max ms', 'largest gap ms'],
      [
        row(`during ${swaps} swaps`, during),
        row('baseline (no swaps)', base),
        row(`during ${swaps} swaps, ${PACE_MS} ms apart`, paced),
        row(`${swaps} pings of an unrelated process, ${PACE_MS} ms apart (no swaps)`, pings),
      ],
    ),
    '',
    '| goal | target | measured | status |',
    '|---|---|---|---|',
    `| reads during swaps: p99 | ≤ 1.5 × baseline + 0.1 ms (${fmt(bound)} ms) | ${fmt(during.p99Ms)} ms, ${during.errors} errors | ${met && during.errors === 0 ? 'met' : 'missed'} |`,
    '',
    `The same bound against two phases that are not goals: the swaps again with ${PACE_MS} ms between them, and no swap at all ` +
      `while the bench process sends one small JSON POST every ${PACE_MS} ms to an HTTP server process that has nothing to do ` +
      `with rostore (echo-server.ts) and reads its answer.`,
    '',
    `| phase | p99 | against the bound (${fmt(bound)} ms) |`,
    '|---|---|---|',
    against(`swaps ${PACE_MS} ms apart`, paced),
    against(`pings of an unrelated process ${PACE_MS} ms apart`, pings),
    '',
  ].join('\n')
  return { markdown }
}
