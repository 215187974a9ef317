import { runChaos } from '../../testkit/cluster/push-chaos'
import { faultSeed, reportFigures } from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * Promise 4 of docs/RELIABILITY.md under random faults (testkit/cluster/push-chaos.ts): a short
 * seeded subset of the chaos runs (`node dist/bench/versions/chaos-bench.js --runs 200` is the long
 * one). ROSTORE_FAULT_SEED replays a seed; ROSTORE_CHAOS_RUNS sets the number of operations.
 */

const RUNS = Number(process.env['ROSTORE_CHAOS_RUNS'] ?? 6)
jest.setTimeout(RUNS * 40_000 + 60_000)
const tmp = makeTmp('rostore-push-chaos-')
afterAll(() => tmp.cleanup())

test(`${RUNS} pushes and rollbacks with faults: one version, decided, converged, nothing left`, async () => {
  const seed = faultSeed(20261207)
  const r = await runChaos({ dir: tmp.dir, seed, runs: RUNS, log: (m) => process.stderr.write(`push-chaos: ${m}\n`) })
  reportFigures(
    'push-chaos',
    `push-chaos (seed ${seed}, replay with ROSTORE_FAULT_SEED=${seed}): ${r.pushes} pushes, ${r.rollbacks} rollbacks, faults ${JSON.stringify(r.faults)}; ${r.committed} went live, ${r.kept} kept the old version (${r.keptWithoutFault} without a fault); ${r.reads} checked multi-gets (${r.readErrors} failed reads), ${r.regressionsDuringSwaps} older reads during swaps; slowest convergence ${r.slowestConvergeMs} ms; unused fetched versions left ${r.unusedVersionsLeft}; violations ${r.violations.length}`,
    { ...r },
  )
  expect({ seed, violations: r.violations }).toEqual({ seed, violations: [] })
  expect(r.reads).toBeGreaterThan(0)
  expect(r.pushes + r.rollbacks).toBe(RUNS)
})
