import { buildRing, heldPartitionMask } from '../../../cluster/routing'
import type { StoreMetadata } from './metadata'

/**
 * Which partitions of a version a node holds, the one answer every read path uses (HTTP
 * key ownership, RESP routing, dump streams): a format-2 node view names them (`held`);
 * otherwise they follow from the version's own layout and replication.
 */
export function heldPartitionMaskOf(meta: StoreMetadata, nodeId: number): Uint8Array {
  const ring = buildRing(meta.layout)
  if (meta.held === undefined) return heldPartitionMask(ring, meta.replication, nodeId)
  const mask = new Uint8Array(ring.partitionCount)
  for (const p of meta.held) mask[p] = 1
  return mask
}

/** heldPartitionMaskOf as the list of held partition ids, ascending. */
export function heldPartitionsOf(meta: StoreMetadata, nodeId: number): number[] {
  const held: number[] = []
  heldPartitionMaskOf(meta, nodeId).forEach((h, p) => h === 1 && held.push(p))
  return held
}
