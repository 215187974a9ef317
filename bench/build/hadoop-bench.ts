/**
 * Hadoop Streaming engine vs the local engine: the same TSV input built by `buildStore`
 * (worker threads) and by the local Hadoop Streaming harness (separate mapper processes,
 * KeyFieldBasedPartitioner routing, `LC_ALL=C sort`, 2 reducer processes, finalize), and
 * the outputs compared byte for byte. The difference is the cost of the text shuffle.
 *
 *   node dist/bench/build/hadoop-bench.js [--records 1000000] [--value-bytes 100] [--dir /tmp]
 *
 * Prints a markdown table on stdout; progress goes to stderr. MB = 10^6 bytes.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildStore } from '../../builder/engines/local/build-job'
import { prepareHadoopJob } from '../../builder/engines/hadoop/print-command'
import { fileTree } from '../../testkit/stores/file-tree'
import { runFinalize, runHarness } from '../../testkit/peers/hadoop-harness'
import { arg, engineBenchCluster, log, writeEngineTsv } from './engine-input'

const MB = 1e6

function dirBytes(dir: string, pattern: RegExp): number {
  return readdirSync(dir)
    .filter((n) => pattern.test(n))
    .reduce((s, n) => s + statSync(join(dir, n)).size, 0)
}

async function main(): Promise<void> {
  const records = Number(arg('--records', '1000000'))
  const valueBytes = Number(arg('--value-bytes', '100'))
  const root = mkdtempSync(join(arg('--dir', tmpdir()), 'rostore-hadoop-bench-'))
  try {
    const input = join(root, 'input.tsv')
    log(`writing ${records} records...`)
    const inputBytes = writeEngineTsv(input, records, valueBytes)
    const cluster = engineBenchCluster()
    const base = { inputs: [input], format: 'tsv' as const, cluster, store: 'bench', version: 1, replication: 1, chunks: 4 }

    log('local engine...')
    const t0 = Date.now()
    await buildStore({ ...base, output: join(root, 'local'), workers: cpus().length })
    const localSeconds = (Date.now() - t0) / 1000

    log('hadoop streaming harness, 2 reducers...')
    const t1 = Date.now()
    const job = await prepareHadoopJob({ build: { ...base, output: join(root, 'hadoop') }, reducers: 2, jobDir: join(root, 'job') })
    const work = join(root, 'work')
    const run = await runHarness({
      spec: job.spec,
      specPath: job.specPath,
      workDir: work,
      splitBytes: 16 << 20,
      concurrency: cpus().length,
    })
    const t2 = Date.now()
    await runFinalize(job.specPath, run.statsDir)
    const finalizeSeconds = (Date.now() - t2) / 1000
    const hadoopSeconds = (Date.now() - t1) / 1000
    const shuffleBytes = dirBytes(work, /\.sorted$/)

    const a = fileTree(join(root, 'local'))
    const b = fileTree(join(root, 'hadoop'))
    const identical = a.size === b.size && [...a].every(([n, bytes]) => b.get(n)?.equals(bytes) === true)

    const rate = (s: number): string => `${(records / s / 1000).toFixed(0)}k`
    const out = [
      `Hadoop Streaming harness vs local engine: ${records} records, ${valueBytes}-byte values, ${(inputBytes / MB).toFixed(0)} MB TSV, ` +
        `${cluster.nodes.length} nodes x ${base.chunks} chunks, ${cpus().length} cores`,
      '',
      '| engine | seconds | records/s | notes |',
      '|---|---:|---:|---|',
      `| local (\`rostore build\`, ${cpus().length} workers) | ${localSeconds.toFixed(1)} | ${rate(localSeconds)} | |`,
      `| harness, 2 reducers (total) | ${hadoopSeconds.toFixed(1)} | ${rate(hadoopSeconds)} | ${(hadoopSeconds / localSeconds).toFixed(1)}x the local time |`,
      `| &nbsp;&nbsp;map (${run.mapTasks} tasks) | ${run.seconds.map.toFixed(1)} | | |`,
      `| &nbsp;&nbsp;shuffle: partition + \`LC_ALL=C sort\` | ${run.seconds.shuffle.toFixed(1)} | | ${(shuffleBytes / MB).toFixed(0)} MB of shuffle text (${(shuffleBytes / inputBytes).toFixed(2)}x the input) |`,
      `| &nbsp;&nbsp;reduce (2 tasks) | ${run.seconds.reduce.toFixed(1)} | | |`,
      `| &nbsp;&nbsp;finalize | ${finalizeSeconds.toFixed(1)} | | |`,
      '',
      `Outputs byte-identical: ${identical ? 'yes' : 'NO'}`,
    ]
    process.stdout.write(out.join('\n') + '\n')
    if (!identical) process.exitCode = 1
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
