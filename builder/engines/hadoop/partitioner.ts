/**
 * Hadoop's org.apache.hadoop.mapred.lib.KeyFieldBasedPartitioner as configured by the
 * job rostore prints (`mapreduce.partition.keypartitioner.options=-k1,1`,
 * `mapreduce.map.output.key.field.separator=.`), bit for bit:
 *
 *   for (i = start; i <= end; i++) hash = 31 * hash + b[i]   // Java int, b[i] a signed byte
 *   partition = (hash & Integer.MAX_VALUE) % numReduceTasks
 *
 * over the bytes of the first field of the key (the key is the line before its first tab).
 * An empty key goes to partition 0, as in Hadoop. The local harness uses it to route lines
 * exactly as a cluster would; the reducer count printed for a job is checked against it.
 */
const TAB = 0x09
const DOT = 0x2e

export function keyFieldPartition(line: Uint8Array, s: number, e: number, numReduceTasks: number, separator = DOT): number {
  if (!Number.isInteger(numReduceTasks) || numReduceTasks < 1)
    throw new RangeError(`numReduceTasks must be a positive integer, got ${numReduceTasks}`)
  let keyEnd = line.indexOf(TAB, s)
  if (keyEnd < 0 || keyEnd > e) keyEnd = e
  if (keyEnd === s) return 0
  let fieldEnd = line.indexOf(separator, s)
  if (fieldEnd < 0 || fieldEnd > keyEnd) fieldEnd = keyEnd
  let hash = 0
  for (let i = s; i < fieldEnd; i++) hash = (Math.imul(31, hash) + ((line[i]! << 24) >> 24)) | 0
  return (hash & 0x7fffffff) % numReduceTasks
}

/** The partition of a whole key string (for tests and tools). */
export function keyFieldPartitionOf(key: string, numReduceTasks: number): number {
  const b = Buffer.from(key, 'utf8')
  return keyFieldPartition(b, 0, b.length, numReduceTasks)
}
