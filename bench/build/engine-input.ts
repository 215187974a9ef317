/**
 * What the distributed-engine benchmarks (bench/build/hadoop-bench.ts, bench/build/ray-bench.ts) share:
 * their command-line flags and the TSV they build with each engine, the same bytes for a
 * given size on every run.
 */
import { closeSync, openSync, writeSync } from 'node:fs'
import { parseCluster, type Cluster } from '../../cluster/cluster'

/** The value of `--flag VALUE` on the command line, or the fallback. */
export function arg(flag: string, fallback: string): string {
  const i = process.argv.indexOf(flag)
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback
}

/** Progress on stderr (stdout carries the markdown). */
export function log(msg: string): void {
  process.stderr.write(`${msg}\n`)
}

/** `records` lines `user:<base36 i>\t<value>` of pseudo-random alphanumeric values; the file's size. */
export function writeEngineTsv(path: string, records: number, valueBytes: number): number {
  const fd = openSync(path, 'w')
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
  let size = 0
  let parts: string[] = []
  let x = 12345
  for (let i = 0; i < records; i++) {
    let v = ''
    for (let j = 0; j < valueBytes; j++) {
      x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff
      v += alphabet[x % alphabet.length]
    }
    parts.push(`user:${i.toString(36)}\t${v}\n`)
    if (parts.length === 10000) {
      size += writeSync(fd, parts.join(''))
      parts = []
    }
  }
  if (parts.length > 0) size += writeSync(fd, parts.join(''))
  closeSync(fd)
  return size
}

/** The cluster both engines build for: 2 nodes of 3 partitions, on loopback addresses never dialled. */
export function engineBenchCluster(): Cluster {
  return parseCluster({
    name: 'bench',
    nodes: [
      { id: 0, host: '127.0.0.1', port: 7000, partitions: [0, 2, 4] },
      { id: 1, host: '127.0.0.1', port: 7001, partitions: [1, 3, 5] },
    ],
  })
}
