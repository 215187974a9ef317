import type { OutputLayout } from './build-options'

/**
 * Default chunk count: about one chunk per 256 MiB. Chunks are the unit of reduce
 * parallelism and keep every index small enough to load, so the count grows with the data
 * instead of a file size ceiling. Depends only on the input size (and the cluster file),
 * so rebuilding the same input gives the same layout.
 */
export const TARGET_CHUNK_BYTES = 256 << 20

/** Format 1: chunks per node, from a node's share of the input (replicas included), at least 2. */
export function defaultChunkCount(inputBytes: number, replication: number, nodes: number): number {
  const perNode = (inputBytes * replication) / nodes
  return Math.min(65536, Math.max(2, Math.ceil(perNode / TARGET_CHUNK_BYTES)))
}

/**
 * Format 2: chunks per partition, from a partition's share of the input, at least 1. Never
 * from the replication or the node count: the partition files must not depend on them.
 */
export function defaultPartitionChunkCount(inputBytes: number, partitions: number): number {
  return Math.min(65536, Math.max(1, Math.ceil(inputBytes / partitions / TARGET_CHUNK_BYTES)))
}

export function defaultChunks(
  layout: OutputLayout,
  inputBytes: number,
  replication: number,
  cluster: { readonly nodes: number; readonly partitions: number },
): number {
  return layout === 'partitions'
    ? defaultPartitionChunkCount(inputBytes, cluster.partitions)
    : defaultChunkCount(inputBytes, replication, cluster.nodes)
}
