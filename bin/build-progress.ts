import { SingleBar, Presets } from 'cli-progress'
import type { BuildProgress } from '../builder/build-options'
import type { BuildSummary } from '../builder/engines/local/build-job'
import { STAGES } from '../builder/stage-times'

/** A terminal progress bar over input bytes (map) then chunks (reduce). */
export function createBuildProgressBar(): { update: (p: BuildProgress) => void; stop: () => void } {
  const bar = new SingleBar(
    {
      format: '{phase} [{bar}] {percentage}% | {records} records | {rate} | ETA {eta_formatted}',
      stream: process.stderr,
      hideCursor: true,
    },
    Presets.shades_classic,
  )
  let started = false
  let stopped = false
  const t0 = Date.now()
  return {
    update: (p) => {
      if (stopped) return
      const total = p.phase === 'map' ? Math.max(1, p.bytesTotal) : Math.max(1, p.bucketsTotal)
      const value = p.phase === 'map' ? p.bytesRead : p.bucketsDone
      const rate = `${Math.round(p.records / Math.max(0.001, (Date.now() - t0) / 1000)).toLocaleString('en-US')} rec/s`
      const payload = { phase: p.phase === 'map' ? 'map   ' : 'reduce', records: p.records.toLocaleString('en-US'), rate }
      if (!started) {
        bar.start(total, value, payload)
        started = true
      } else {
        bar.setTotal(total)
        bar.update(value, payload)
      }
    },
    stop: () => {
      if (started && !stopped) bar.stop()
      stopped = true
    },
  }
}

export function printBuildSummary(s: BuildSummary): void {
  const mb = (b: number) => (b / (1 << 20)).toFixed(1)
  const lines = [
    `built store ${s.store} version ${s.version} in ${s.output}`,
    `  ${s.inputRecords.toLocaleString('en-US')} input records, ${mb(s.inputBytes)} MiB read, ${s.chunks} chunks per ${s.layout === 'partitions' ? 'partition' : 'node'}, ${s.runs} runs spilled to disk, ${s.seconds.toFixed(2)} s` +
      ` (${Math.round(s.inputRecords / Math.max(s.seconds, 0.001)).toLocaleString('en-US')} records/s)`,
    ...(s.duplicates > 0 ? [`  ${s.duplicates} duplicate keys dropped`] : []),
    `  stages (worker seconds): ${STAGES.map((k) => `${k} ${s.stages[k].toFixed(2)}`).join(', ')}`,
    ...(s.patches !== undefined
      ? [
          `  patches against the base: ${s.patches.partitions} partitions, ${mb(s.patches.bytes)} MiB, ${s.patches.seconds.toFixed(2)} s after the reduce`,
        ]
      : []),
    ...s.nodes.map((n) => `  node ${n.nodeId}: ${n.records.toLocaleString('en-US')} records, ${mb(n.bytes)} MiB`),
  ]
  process.stdout.write(lines.join('\n') + '\n')
}
