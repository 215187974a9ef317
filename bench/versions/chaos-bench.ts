/**
 * Push chaos soak, run by bench/run.ts (`--only chaos`) as its own process:
 *   node dist/bench/versions/chaos-bench.js [--quick] [--runs N] [--seed S] [--minutes M]
 *
 * testkit/cluster/push-chaos.ts for N operations (200; 20 with --quick) from seed S (printed, and
 * replayable the same way, or with ROSTORE_FAULT_SEED in test/reliability/push-chaos.test.ts),
 * on 300 keys; no operation starts after M minutes (60, or ROSTORE_CHAOS_MINUTES when run
 * by bench/run.ts; 10 with --quick), so the run is
 * bounded on a busy machine (the table says how many ran). A run that finds a violation
 * stops there and prints it with its seed. Markdown on stdout, progress on stderr.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runChaos } from '../../testkit/cluster/push-chaos'

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick')
  const runs = Number(arg('--runs') ?? (quick ? 20 : 200))
  const seed = Number(arg('--seed') ?? Date.now() % 1_000_000_000)
  const minutes = Number(arg('--minutes') ?? process.env['ROSTORE_CHAOS_MINUTES'] ?? (quick ? 10 : 60))
  if (!Number.isSafeInteger(runs) || runs < 1 || !Number.isSafeInteger(seed) || !(minutes > 0))
    throw new Error('--runs and --seed take integers, --minutes a positive number')
  const dir = mkdtempSync(join(tmpdir(), 'rostore-chaos-bench-'))
  process.stderr.write(`chaos-bench: seed ${seed}, ${runs} operations\n`)
  try {
    const t0 = Date.now()
    const r = await runChaos({ dir, seed, runs, until: t0 + minutes * 60_000, log: (m) => process.stderr.write(`chaos-bench: ${m}\n`) })
    const ok = r.violations.length === 0
    const lines = [
      `Seed ${seed} (replay: \`node dist/bench/versions/chaos-bench.js --runs ${runs} --seed ${seed}\`), ${r.runs} of ${runs} operations in ${((Date.now() - t0) / 1000).toFixed(0)} s (budget ${minutes} min).`,
      '',
      '| operations | pushes | rollbacks | faults | went live | kept old (of them without a fault) | checked multi-gets | failed reads | older reads in a swap | slowest convergence | unused fetches left | violations |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|',
      `| ${r.pushes + r.rollbacks} | ${r.pushes} | ${r.rollbacks} | ${Object.entries(r.faults)
        .map(([k, v]) => `${k} ${v}`)
        .join(
          ', ',
        )} | ${r.committed} | ${r.kept} (${r.keptWithoutFault}) | ${r.reads} | ${r.readErrors} | ${r.regressionsDuringSwaps} | ${r.slowestConvergeMs} ms | ${r.unusedVersionsLeft} | ${r.violations.length} |`,
      '',
      '| goal | target | measured | status |',
      '|---|---|---|---|',
      `| push chaos: one version, decided, converged within 30 s, nothing staged left | 0 violations | ${r.violations.length} violations | ${ok ? 'met' : 'missed'} |`,
      '',
      ...r.violations.map((v) => `- ${v}`),
      '',
    ]
    process.stdout.write(lines.join('\n'))
    if (!ok) process.exitCode = 1
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
