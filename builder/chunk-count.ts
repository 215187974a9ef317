/**
 * Default chunks per node: about one chunk per 256 MiB of a node's share of the input,
 * at least 2. Chunks are the unit of reduce parallelism and keep every index small
 * enough to load, so the count grows with the data instead of a file size ceiling.
 * Depends only on the input size, so rebuilding the same input gives the same layout.
 */
export const TARGET_CHUNK_BYTES = 256 << 20

export function defaultChunkCount(inputBytes: number, replication: number, nodes: number): number {
  const perNode = (inputBytes * replication) / nodes
  return Math.min(65536, Math.max(2, Math.ceil(perNode / TARGET_CHUNK_BYTES)))
}
