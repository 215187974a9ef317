import { parseCluster, type Cluster } from '../../cluster/cluster'

/**
 * What the engine tests (local vs Hadoop Streaming vs Ray, byte for byte) build from: one
 * 3-node cluster of 9 partitions, and records whose keys repeat across and within files.
 */
export const ENGINE_TEST_CLUSTER: Cluster = parseCluster({
  name: 'test',
  nodes: [
    { id: 0, host: '127.0.0.1', port: 7100, partitions: [0, 3, 6] },
    { id: 1, host: '127.0.0.1', port: 7101, partitions: [1, 4, 7] },
    { id: 2, host: '127.0.0.1', port: 7102, partitions: [2, 5, 8] },
  ],
})

/**
 * `n` records of input file `file`. Every fifth key is one of 40 shared by all files, so
 * which duplicate wins ("first"/"last") depends on the file's index and the record's
 * position; values hold quotes, non-ASCII text and `separator`.
 */
export function engineRecords(n: number, file: number, separator = '\t'): [string, string][] {
  return Array.from({ length: n }, (_, i) => {
    const k = i % 5 === 0 ? i % 40 : i + file * n
    return [`key-${k}`, `v${file}-${i}${separator}${'é'.repeat(i % 7)} "q" ${'x'.repeat(i % 50)}`]
  })
}
