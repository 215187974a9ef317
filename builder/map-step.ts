import type { InputRecord } from '../formats/input/types'
import type { ValueCodec } from '../formats/store/codec'
import type { KeyHasher } from '../formats/store/key-hash'
import type { ClusterLayoutNode } from '../cluster/layout'
import type { MappedRecord } from './mapped-record'
import { buildRing, masterPartition, replicaTable, type Ring } from '../cluster/routing'
import { chunkOf } from '../formats/store/layout'

/**
 * The map step, shared by the local engine and Hadoop Streaming: one input record in,
 * one mapped record per replica out, addressed to bucket (node position × chunks + chunk).
 */
export interface MapContext {
  readonly ring: Ring
  readonly replicas: readonly (readonly number[])[]
  /** Node id -> position of the node in the layout sorted by id. */
  readonly nodePosition: ReadonlyMap<number, number>
  readonly chunks: number
  readonly hasher: KeyHasher
  readonly codec: ValueCodec
  /** Per master partition: node position × chunks of each replica node, master first. */
  readonly bucketBases: readonly (readonly number[])[]
}

export function createMapContext(
  layout: readonly ClusterLayoutNode[],
  replication: number,
  chunks: number,
  hasher: KeyHasher,
  codec: ValueCodec,
): MapContext {
  const ring = buildRing(layout)
  const sorted = [...layout].sort((a, b) => a.id - b.id)
  const nodePosition = new Map(sorted.map((n, i) => [n.id, i]))
  const replicas = replicaTable(ring, replication)
  return {
    ring,
    replicas,
    nodePosition,
    chunks,
    hasher,
    codec,
    bucketBases: replicas.map((nodes) => nodes.map((node) => (nodePosition.get(node) as number) * chunks)),
  }
}

export function mapRecord(rec: InputRecord, fileIndex: number, ctx: MapContext, emit: (m: MappedRecord) => void): void {
  const hash = ctx.hasher.hash(rec.key)
  const chunk = chunkOf(hash, ctx.chunks)
  const value = ctx.codec.encode(rec.value)
  const line = rec.source.line ?? rec.source.row ?? 0
  for (const base of ctx.bucketBases[masterPartition(hash, ctx.ring.partitionCount)] as readonly number[]) {
    emit({ bucket: base + chunk, hash, fileIndex, order: rec.order, line, key: rec.key, value })
  }
}

/** Bucket number -> (node position, chunk). */
export function splitBucket(bucket: number, chunks: number): { nodePosition: number; chunk: number } {
  return { nodePosition: Math.floor(bucket / chunks), chunk: bucket % chunks }
}
