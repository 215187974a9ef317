/**
 * The Ray engine vs the local engine: the same TSV input built by `buildStore` (worker
 * threads) and by `buildOnRay` on a real Ray cluster started here (a head without CPUs
 * and one worker node per core, one CPU each: testkit/peers/ray-cluster.ts), outputs compared
 * byte for byte. Reports per-phase times, where the task time goes (the rostore CLI vs
 * Ray's own share: scheduling, the Python glue that cuts splits and partitions lines,
 * the object store), and from the per-task rates an estimate for 1 TB on 100 nodes of
 * 16 cores.
 *
 *   node dist/bench/build/ray-bench.js [--records 1000000] [--value-bytes 100] [--dir /tmp] [--quick]
 *
 * Prints markdown on stdout; progress goes to stderr. MB = 10^6 bytes.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildStore } from '../../builder/engines/local/build-job'
import { buildOnRay } from '../../builder/engines/ray/ray-build'
import { cliPath } from '../../common/paths'
import { fileTree } from '../../testkit/stores/file-tree'
import { startRayCluster } from '../../testkit/peers/ray-cluster'
import { arg, engineBenchCluster, log, writeEngineTsv } from './engine-input'

const MB = 1e6

function same(a: string, b: string): boolean {
  const x = fileTree(a)
  const y = fileTree(b)
  return x.size === y.size && [...x].every(([n, bytes]) => y.get(n)?.equals(bytes) === true)
}

/** Seconds to start the rostore CLI once: the fixed cost of every task. */
function cliStartSeconds(): number {
  const t = performance.now()
  spawnSync(process.execPath, [cliPath(), '--version'])
  return (performance.now() - t) / 1000
}

async function main(): Promise<void> {
  const records = Number(arg('--records', '1000000'))
  const valueBytes = Number(arg('--value-bytes', '100'))
  const cores = cpus().length
  const root = mkdtempSync(join(arg('--dir', tmpdir()), 'rostore-ray-bench-'))
  log(`starting a Ray cluster: head + ${cores} worker nodes...`)
  const t0 = performance.now()
  const ray = await startRayCluster({ dir: join(root, 'ray'), workers: cores, objectStoreBytes: 200_000_000 })
  const clusterSeconds = (performance.now() - t0) / 1000
  try {
    const input = join(root, 'input.tsv')
    log(`writing ${records} records...`)
    const inputBytes = writeEngineTsv(input, records, valueBytes)
    const cluster = engineBenchCluster()
    const base = { inputs: [input], format: 'tsv' as const, cluster, store: 'bench', version: 1, replication: 1, chunks: 4 }
    const splitBytes = Math.max(1 << 20, Math.ceil(inputBytes / (4 * cores)))

    log('local engine...')
    const t1 = performance.now()
    await buildStore({ ...base, output: join(root, 'local'), workers: cores })
    const localSeconds = (performance.now() - t1) / 1000

    log('ray engine...')
    const s = await buildOnRay({
      build: { ...base, output: join(root, 'ray-out') },
      address: ray.address,
      python: ray.python,
      reducers: 4,
      splitBytes,
      onProgress: log,
    })
    const identical = same(join(root, 'local'), join(root, 'ray-out'))
    const cliStart = cliStartSeconds()

    const j = s.job
    const sec = j.seconds
    const f = (x: number, d = 1): string => x.toFixed(d)
    const rate = (secs: number): string => `${(records / secs / 1000).toFixed(0)}k`
    const mapRayShare = sec.mapTaskSum - sec.mapRostoreSum
    const reduceRayShare = sec.reduceTaskSum - sec.reduceSortSum - sec.reduceRostoreSum
    // Per task-second rates without the fixed start of the rostore CLI per task (tasks
    // here are small; a big job's are 64 MiB), for the estimate on a big cluster.
    const shuffleRatio = j.shuffleBytes / j.inputBytes
    const mapWork = Math.max(sec.mapTaskSum - j.mapTasks * cliStart, sec.mapTaskSum / 4)
    const reduceWork = Math.max(sec.reduceTaskSum - j.reduceTasks * cliStart, sec.reduceTaskSum / 4)
    const mapBytesPerTaskSec = j.inputBytes / mapWork
    const reduceShuffleBytesPerTaskSec = j.shuffleBytes / reduceWork
    const TB = 1e12
    const slots = 100 * 16
    const bigSplit = 64 * 2 ** 20
    const bigMapTasks = Math.ceil(TB / bigSplit)
    const bigMap = (bigMapTasks * (cliStart + bigSplit / mapBytesPerTaskSec)) / slots
    // One reduce wave of 1,600 tasks, each with 1/1,600 of the shuffle.
    const bigReduce = cliStart + (TB * shuffleRatio) / slots / reduceShuffleBytesPerTaskSec
    const out = [
      `Ray engine vs local engine: ${records} records, ${valueBytes}-byte values, ${f(inputBytes / MB, 0)} MB TSV, ` +
        `${cluster.nodes.length} nodes x ${base.chunks} chunks, ${cores} cores; Ray ${j.nodes} nodes (head without CPUs + ${cores} workers of 1 CPU), ` +
        `${j.mapTasks} map tasks of ${f(splitBytes / MB)} MB, ${j.reduceTasks} reduce tasks`,
      '',
      '| engine / phase | seconds | records/s | notes |',
      '|---|---:|---:|---|',
      `| local (\`rostore build\`, ${cores} workers) | ${f(localSeconds)} | ${rate(localSeconds)} | |`,
      `| Ray (total) | ${f(s.seconds.total)} | ${rate(s.seconds.total)} | ${f(s.seconds.total / localSeconds)}x the local time |`,
      `| &nbsp;&nbsp;prepare (job spec) | ${f(s.seconds.prepare, 2)} | | |`,
      `| &nbsp;&nbsp;driver start + connect | ${f(s.seconds.ray - sec.map - sec.reduce)} | | Python start, \`import ray\`, \`ray.init\`: Ray's own |`,
      `| &nbsp;&nbsp;map (${j.mapTasks} tasks) | ${f(sec.map)} | | task-seconds ${f(sec.mapTaskSum)}: rostore CLI ${f(sec.mapRostoreSum)}, Ray's share ${f(mapRayShare)} (split lines, partition, object store) |`,
      `| &nbsp;&nbsp;reduce (${j.reduceTasks} tasks) | ${f(sec.reduce)} | | task-seconds ${f(sec.reduceTaskSum)}: \`sort\` ${f(sec.reduceSortSum)}, rostore CLI ${f(sec.reduceRostoreSum)}, Ray's share ${f(reduceRayShare)} (fetch partitions, write them out) |`,
      `| &nbsp;&nbsp;finalize | ${f(s.seconds.finalize, 2)} | | |`,
      '',
      `Shuffle: ${f(j.shuffleBytes / MB, 0)} MB of shuffle lines (${f(shuffleRatio, 2)}x the input) through Ray's object store; ` +
        `spilled ${j.spilledMiB === null ? 'unknown' : `${j.spilledMiB} MiB`}; ${j.retries} retried attempts. ` +
        `Starting the rostore CLI costs ${f(cliStart, 2)} s per task; starting this Ray cluster took ${f(clusterSeconds)} s (not counted).`,
      '',
      `On paper, 1 TB of the same TSV on 100 nodes of 16 cores (1,600 task slots), from the per-task rates measured here ` +
        `(without the CLI start: map ${f(mapBytesPerTaskSec / MB)} MB of input per task-second, reduce ${f(reduceShuffleBytesPerTaskSec / MB)} MB of shuffle per task-second): ` +
        `${bigMapTasks.toLocaleString('en-US')} map tasks of 64 MiB in ${f(bigMapTasks / slots, 1)} waves = ${f(bigMap / 60)} min, ` +
        `then 1,600 reduce tasks of ${f((TB * shuffleRatio) / slots / 1e9, 2)} GB of shuffle each = ${f(bigReduce / 60)} min; ` +
        `about ${f((bigMap + bigReduce) / 60)} min in all, if the network and shared storage keep up ` +
        `(${f((TB * shuffleRatio) / bigMap / 1e9, 1)} GB/s of shuffle into the object stores while mapping, ` +
        `${f((TB * shuffleRatio) / bigReduce / 1e9, 1)} GB/s out of them while reducing, and the output written at the same pace).`,
      '',
      `Outputs byte-identical: ${identical ? 'yes' : 'NO'}`,
    ]
    process.stdout.write(out.join('\n') + '\n')
    if (!identical) process.exitCode = 1
  } finally {
    await ray.stop()
    rmSync(root, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
