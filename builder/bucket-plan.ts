import type { ClusterLayoutNode } from '../cluster/layout'
import type { ChunkIdentity } from '../formats/store/chunk/chunk-writer'
import { dataFileName, indexFileName, nodeDirName } from '../formats/store/layout/layout'
import { partitionDataFileName, partitionIndexFileName } from '../formats/store/layout/partition-files'
import type { OutputLayout } from './build-options'

/**
 * What the map step's bucket numbers stand for, shared by every engine:
 *   nodes (format 1):      bucket = node position (layout sorted by id) × chunks + chunk
 *   partitions (format 2): bucket = partition × chunks + chunk
 * and where the reduce writes each bucket's chunk.
 */
export interface BucketPlan {
  readonly layout: OutputLayout
  readonly chunks: number
  /** Node ids, ascending (format 1 positions). */
  readonly nodeIds: readonly number[]
  /** Partition count P of the ring. */
  readonly partitions: number
}

export function bucketPlan(layout: OutputLayout, cluster: readonly ClusterLayoutNode[], chunks: number): BucketPlan {
  return {
    layout,
    chunks,
    nodeIds: cluster.map((n) => n.id).sort((a, b) => a - b),
    partitions: cluster.reduce((s, n) => s + n.partitions.length, 0),
  }
}

export function bucketCount(plan: BucketPlan): number {
  return (plan.layout === 'partitions' ? plan.partitions : plan.nodeIds.length) * plan.chunks
}

/** One bucket's chunk: its directory under the output root ('' = the root itself) and owner. */
export interface BucketTarget {
  readonly bucket: number
  readonly chunk: number
  /** Format 1: the node whose directory holds the chunk. */
  readonly nodeId?: number
  /** Format 2: the partition the chunk belongs to. */
  readonly partition?: number
  readonly dir: string
}

export function bucketTarget(plan: BucketPlan, bucket: number): BucketTarget {
  const owner = Math.floor(bucket / plan.chunks)
  const chunk = bucket % plan.chunks
  if (plan.layout === 'partitions') return { bucket, chunk, partition: owner, dir: '' }
  const nodeId = plan.nodeIds[owner] as number
  return { bucket, chunk, nodeId, dir: nodeDirName(nodeId) }
}

/** The identity a bucket's ChunkWriter gets (names and file id of its two files). */
export function targetIdentity(t: BucketTarget, store: string, version: number): ChunkIdentity {
  if (t.partition !== undefined) return { store, dataVersion: version, partition: t.partition, chunk: t.chunk }
  return { store, version, nodeId: t.nodeId as number, chunk: t.chunk }
}

/** The target a reduced chunk's statistics name must match: another job's statistics otherwise. */
export function sameTarget(t: BucketTarget, s: { readonly chunk: number; readonly nodeId?: number; readonly partition?: number }): boolean {
  return t.chunk === s.chunk && t.nodeId === s.nodeId && t.partition === s.partition
}

/** The file names of a bucket's chunk (also from its statistics). */
export function targetFileNames(t: { readonly chunk: number; readonly partition?: number }): {
  readonly index: string
  readonly data: string
} {
  if (t.partition !== undefined)
    return { index: partitionIndexFileName(t.partition, t.chunk), data: partitionDataFileName(t.partition, t.chunk) }
  return { index: indexFileName(t.chunk), data: dataFileName(t.chunk) }
}
