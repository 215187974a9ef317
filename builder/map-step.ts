import type { InputRecord } from '../formats/input/types'
import type { ValueCodec } from '../formats/store/chunk/codec'
import type { KeyHasher } from '../formats/store/layout/key-hash'
import type { ClusterLayoutNode } from '../cluster/layout'
import type { MappedRecord } from './mapped-record'
import type { OutputLayout } from './build-options'
import { buildRing, masterPartition, replicaTable, type Ring } from '../cluster/routing'
import { chunkOf } from '../formats/store/layout/layout'

/**
 * The map step, shared by the local engine and Hadoop Streaming: one input record in,
 * out one mapped record per replica addressed to bucket (node position × chunks + chunk)
 * (layout `nodes`), or one mapped record addressed to bucket (master partition × chunks +
 * chunk) (layout `partitions`: replicas are the fetchers' business). builder/bucket-plan.ts.
 */
export interface MapContext {
  readonly ring: Ring
  readonly replicas: readonly (readonly number[])[]
  /** Node id -> position of the node in the layout sorted by id. */
  readonly nodePosition: ReadonlyMap<number, number>
  readonly chunks: number
  readonly hasher: KeyHasher
  readonly codec: ValueCodec
  /** Per master partition: the buckets' bases (bucket = base + chunk), one per mapped record. */
  readonly bucketBases: readonly (readonly number[])[]
}

export function createMapContext(
  layout: readonly ClusterLayoutNode[],
  replication: number,
  chunks: number,
  hasher: KeyHasher,
  codec: ValueCodec,
  output: OutputLayout = 'nodes',
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
    bucketBases:
      output === 'partitions'
        ? replicas.map((_, p) => [p * chunks])
        : replicas.map((nodes) => nodes.map((node) => (nodePosition.get(node) as number) * chunks)),
  }
}

/** Maps one record; returns its value as stored (encoded by the store's codec), emitted once per bucket. */
export function mapRecord(rec: InputRecord, fileIndex: number, ctx: MapContext, emit: (m: MappedRecord) => void): Uint8Array {
  const hash = ctx.hasher.hash(rec.key)
  const chunk = chunkOf(hash, ctx.chunks)
  const value = ctx.codec.encode(rec.value)
  const line = rec.source.line ?? rec.source.row ?? 0
  for (const base of ctx.bucketBases[masterPartition(hash, ctx.ring.partitionCount)] as readonly number[]) {
    emit({ bucket: base + chunk, hash, fileIndex, order: rec.order, line, key: rec.key, value })
  }
  return value
}
