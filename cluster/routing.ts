import { readU32BE } from '../common/bytes'
import type { ClusterLayoutNode } from './layout'

/**
 * Pure routing, shared by the builder and the client. A key's MD5 decides everything:
 * bytes 0-3 pick the master partition; bytes 4-7 pick the chunk inside a node, a rule of
 * the store format (formats/store/layout/layout.ts `chunkOf`).
 */
export interface Ring {
  readonly partitionCount: number
  /** Owner node id of each partition, indexed by partition id. */
  readonly owners: Int32Array
  readonly nodeCount: number
}

export function buildRing(layout: readonly ClusterLayoutNode[]): Ring {
  const partitionCount = layout.reduce((n, node) => n + node.partitions.length, 0)
  const owners = new Int32Array(partitionCount).fill(-1)
  for (const node of layout) for (const p of node.partitions) owners[p] = node.id
  if (owners.includes(-1)) throw new RangeError('partitions must be 0..P-1 with no gaps')
  return { partitionCount, owners, nodeCount: layout.length }
}

export function masterPartition(hash: Uint8Array, partitionCount: number): number {
  return readU32BE(hash, 0) % partitionCount
}

/**
 * Replica nodes of a partition, master first: the owners of the following partitions
 * on the ring, skipping nodes already chosen, until `replication` distinct nodes.
 */
export function replicaNodes(ring: Ring, partition: number, replication: number): number[] {
  if (replication < 1 || replication > ring.nodeCount) {
    throw new RangeError(`replication ${replication} must be between 1 and the node count ${ring.nodeCount}`)
  }
  const nodes: number[] = []
  for (let i = 0; i < ring.partitionCount && nodes.length < replication; i++) {
    const owner = ring.owners[(partition + i) % ring.partitionCount] as number
    if (!nodes.includes(owner)) nodes.push(owner)
  }
  return nodes
}

/** Replica nodes of a key hash, master first. */
export function routeHash(ring: Ring, hash: Uint8Array, replication: number): number[] {
  return replicaNodes(ring, masterPartition(hash, ring.partitionCount), replication)
}

/**
 * Replica lists of every partition, computed once: the builder routes millions of keys
 * and the list depends only on the master partition.
 */
export function replicaTable(ring: Ring, replication: number): readonly (readonly number[])[] {
  return Array.from({ length: ring.partitionCount }, (_, p) => replicaNodes(ring, p, replication))
}

/**
 * Which partitions `nodeId` holds (as master or replica) under a layout: 1 at each held
 * partition id. The one answer to "what does this node hold", for HTTP ownership, RESP
 * routes and dumps alike.
 */
export function heldPartitionMask(ring: Ring, replication: number, nodeId: number): Uint8Array {
  const mask = new Uint8Array(ring.partitionCount)
  replicaTable(ring, replication).forEach((nodes, p) => (mask[p] = nodes.includes(nodeId) ? 1 : 0))
  return mask
}

/** heldPartitionMask as the list of held partition ids, ascending. */
export function heldPartitions(ring: Ring, replication: number, nodeId: number): number[] {
  const held: number[] = []
  heldPartitionMask(ring, replication, nodeId).forEach((h, p) => h === 1 && held.push(p))
  return held
}
