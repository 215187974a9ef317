import type { RayBuildSummary } from '../builder/engines/ray/ray-build'

/** The end-of-job report of `rostore build --engine ray`: the store, then what Ray did. */
export function printRaySummary(s: RayBuildSummary): void {
  const j = s.job
  const f = s.finalize
  const mb = (b: number) => (b / (1 << 20)).toFixed(1)
  const sec = (x: number) => x.toFixed(2)
  const lines = [
    `built store ${f.store} version ${f.version} in ${s.output} on Ray (${j.nodes} nodes, ${j.cpus} CPUs)`,
    `  ${j.records.toLocaleString('en-US')} input records, ${mb(j.inputBytes)} MiB read, ${f.chunks} chunks per ${f.layout === 'partitions' ? 'partition' : 'node'}, ${sec(s.seconds.total)} s` +
      ` (${Math.round(j.records / Math.max(s.seconds.total, 0.001)).toLocaleString('en-US')} records/s)`,
    ...(f.duplicates > 0 ? [`  ${f.duplicates} duplicate keys dropped`] : []),
    `  tasks: ${j.mapTasks} map, ${j.reduceTasks} reduce; ${j.retries} retried attempts; ${mb(j.shuffleBytes)} MiB shuffled, ` +
      `${j.spilledMiB === null ? 'unknown' : `${j.spilledMiB} MiB`} spilled`,
    `  seconds: prepare ${sec(s.seconds.prepare)}, connect ${sec(j.seconds.connect)}, map ${sec(j.seconds.map)}, reduce ${sec(j.seconds.reduce)}, ` +
      `finalize ${sec(s.seconds.finalize)} (task seconds: map ${sec(j.seconds.mapTaskSum)}, reduce ${sec(j.seconds.reduceTaskSum)})`,
    ...(s.patches !== undefined
      ? [
          `  patches against the base: ${s.patches.partitions} partitions, ${mb(s.patches.bytes)} MiB, ${sec(s.patches.seconds)} s after finalize`,
        ]
      : []),
    ...f.nodes.map((n) => `  node ${n.nodeId}: ${n.records.toLocaleString('en-US')} records, ${mb(n.bytes)} MiB`),
  ]
  process.stdout.write(lines.join('\n') + '\n')
}
