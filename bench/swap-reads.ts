/**
 * Reads during swaps (issue 19): a probe process reads one key at a time from a store of
 * `records` 100-byte values while the node swaps that store back and forth (swap to 2,
 * rollback to 1) `swaps` times, against a baseline of the same length without swaps, same
 * run. Goal: the p99 during the swaps within noise of the baseline (1.5 × + 0.1 ms).
 */
import { join } from 'node:path'
import { makeNodeDir } from '../testkit/make-store'
import { json, type NodeProcess } from '../testkit/node-process'
import { DEFAULT_SEED, keyOf, valueOf } from './data'
import { p99WithinNoise, phaseRow, startReadProbe } from './probe-client'
import type { PhaseStats } from './read-probe'
import { fmt, mdTable } from './stats'

const STORE = 'reads'

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

export async function readsDuringSwaps(node: NodeProcess, root: string, records: number, swaps: number): Promise<SwapReads> {
  for (const v of [1, 2]) await installVersion(node, join(root, `${STORE}-v${v}`), v, records)
  await adminOk(node, `/stores/${STORE}/swap`, { version: 1 })
  const probe = startReadProbe({ port: node.port, store: STORE, records, seed: DEFAULT_SEED, maxSec: 1800 })
  probe.phase('warm-up')
  await new Promise((r) => setTimeout(r, 2000))
  // The swaps first, timed, so that the baseline after them lasts as long.
  probe.phase('swaps')
  const t0 = performance.now()
  for (let i = 0; i < swaps; i++) {
    if (i % 2 === 0) await adminOk(node, `/stores/${STORE}/swap`, { version: 2 })
    else await adminOk(node, `/stores/${STORE}/rollback`, {})
  }
  const swapSec = (performance.now() - t0) / 1000
  probe.phase('baseline')
  await new Promise((r) => setTimeout(r, Math.max(3, swapSec) * 1000))
  const phases = await probe.stop()
  const base = phases['baseline'] as PhaseStats
  const during = phases['swaps'] as PhaseStats
  const { bound, met } = p99WithinNoise(base, during)
  const row = (name: string, p: PhaseStats): string[] => phaseRow(name, p, ['s', 'reads', 'errors', 'p50', 'p99', 'max', 'gap'])
  const markdown = [
    `## Reads during ${swaps} swaps`,
    '',
    `One node (default workers) serves ${records.toLocaleString('en-US')} records of 100 B in two versions; a probe process reads one key at a time ` +
      `over one keep-alive connection (90% present keys) while the node swaps the store to version 2 and rolls it back, ${swaps} times in all ` +
      `(${fmt(swapSec, 3)} s), then for as long again without swaps (baseline).`,
    '',
    mdTable(
      ['phase', 's', 'reads', 'errors', 'p50 ms', 'p99 ms', 'max ms', 'largest gap ms'],
      [row(`during ${swaps} swaps`, during), row('baseline (no swaps)', base)],
    ),
    '',
    '| goal | target | measured | status |',
    '|---|---|---|---|',
    `| reads during swaps: p99 | ≤ 1.5 × baseline + 0.1 ms (${fmt(bound)} ms) | ${fmt(during.p99Ms)} ms, ${during.errors} errors | ${met && during.errors === 0 ? 'met' : 'missed'} |`,
    '',
  ].join('\n')
  return { markdown }
}
