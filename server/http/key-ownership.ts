import { buildRing, masterPartition } from '../../cluster/routing'
import { heldPartitionMaskOf } from '../../formats/store/layout/held-partitions'
import { createKeyHasher, type KeyHasher } from '../../formats/store/layout/key-hash'
import type { StoreMetadata } from '../../formats/store/layout/metadata'

/**
 * Which keys of one version this node holds, by that version's own layout (its metadata,
 * not the node's cluster file): HTTP reads refuse the others (RESP has its own routes,
 * server/resp/store-routes.ts, with the hasher loaded at start).
 */
export interface Ownership {
  /** The node holds every key (one node, or replication = node count): no hashing needed. */
  readonly all: boolean
  readonly partitionCount: number
  /** 1 where this node is one of the partition's replicas. */
  readonly local: Uint8Array
  readonly hasher: KeyHasher | undefined
}

/**
 * Derived from immutable metadata only (its nodeId, layout, replication and key hash), so
 * one cache serves every store and context of the process; a version's entry goes with
 * its metadata object.
 */
const cache = new WeakMap<StoreMetadata, Ownership | Promise<Ownership>>()

/**
 * The ownership of a live version: synchronous once known (the request path), a promise
 * the first time (the key hasher loads asynchronously).
 */
export function ownershipOf(meta: StoreMetadata): Ownership | Promise<Ownership> {
  const known = cache.get(meta)
  if (known) return known
  const ring = buildRing(meta.layout)
  const local = heldPartitionMaskOf(meta, meta.nodeId)
  const all = local.every((x) => x === 1)
  if (all) {
    const own: Ownership = { all, partitionCount: ring.partitionCount, local, hasher: undefined }
    cache.set(meta, own)
    return own
  }
  const pending = createKeyHasher(meta.keyHash).then((hasher) => {
    const own: Ownership = { all, partitionCount: ring.partitionCount, local, hasher }
    cache.set(meta, own)
    return own
  })
  // A failed load is tried again by the next request rather than cached.
  pending.catch(() => cache.delete(meta))
  cache.set(meta, pending)
  return pending
}

/** Whether this node holds `key` in the version `own` describes. */
export function ownsKey(own: Ownership, key: Uint8Array): boolean {
  if (own.all || !own.hasher) return true
  return own.local[masterPartition(own.hasher.hash(key), own.partitionCount)] === 1
}

/**
 * Whether this node holds every one of `keys` (a multi-get). Key by key: a batch call into
 * the addon's md5Batch is no faster for multi-get sized batches of short keys.
 */
export function ownsAll(own: Ownership, keys: readonly Uint8Array[]): boolean {
  return own.all || keys.every((k) => ownsKey(own, k))
}
