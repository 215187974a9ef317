import { buildRing, masterPartition, replicaTable } from '../../cluster/routing'
import { heldPartitionMaskOf } from '../../formats/store/layout/held-partitions'
import { createKeyHasher, MD5, type KeyHasher } from '../../formats/store/layout/key-hash'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import type { Logger } from '../log'

/** Where the keys of one store version live, as seen from this node. */
export interface StoreRoute {
  readonly store: string
  readonly version: number
  /** This node holds every key of the version (one node, or replication = node count). */
  readonly allLocal: boolean
  readonly partitionCount: number
  /** 1 where this node is one of the partition's replicas. */
  readonly local: Uint8Array
  /** Replicas of each partition, master first (lists shared between equal partitions). */
  readonly replicas: readonly (readonly number[])[]
  /** The same without this node: where to forward when it cannot answer. */
  readonly others: readonly (readonly number[])[]
  readonly hasher: KeyHasher
}

/** The master partition of a key under a route. */
export function partitionOf(route: StoreRoute, key: Uint8Array): number {
  return masterPartition(route.hasher.hash(key), route.partitionCount)
}

/**
 * Routes of the live versions, computed from each version's own metadata (`layout`,
 * `replication`, `keyHash`), not from the startup cluster file: a version built for
 * another layout is routed as it was built. Cached per metadata object, so a swap brings
 * its route with it; the last route of each store is kept for when the store has no live
 * version here (its keys are then forwarded).
 *
 * Key hashers load asynchronously (WebAssembly); md5 is loaded at start, and a key hash
 * met later is loaded then: until it is there `of()` returns undefined.
 */
export class StoreRoutes {
  private readonly byMeta = new WeakMap<StoreMetadata, StoreRoute>()
  private readonly last = new Map<string, StoreRoute>()
  private readonly hashers = new Map<string, KeyHasher>()
  private readonly loading = new Map<string, Promise<void>>()

  constructor(
    private readonly nodeId: number,
    private readonly log: Logger,
  ) {}

  /** Loads the hashers of these key-hash names (md5 always). */
  async preload(names: Iterable<string>): Promise<void> {
    await Promise.all([MD5, ...names].map((n) => this.load(n)))
  }

  of(meta: StoreMetadata): StoreRoute | undefined {
    const known = this.byMeta.get(meta)
    if (known) return known
    const hasher = this.hashers.get(meta.keyHash)
    if (!hasher) {
      void this.load(meta.keyHash)
      return undefined
    }
    const route = this.build(meta, hasher)
    this.byMeta.set(meta, route)
    const prev = this.last.get(meta.store)
    if (!prev || prev.version !== route.version) this.last.set(meta.store, route)
    return route
  }

  /** The route of the store's most recent live version seen here. */
  lastKnown(store: string): StoreRoute | undefined {
    return this.last.get(store)
  }

  private build(meta: StoreMetadata, hasher: KeyHasher): StoreRoute {
    const ring = buildRing(meta.layout)
    const table = replicaTable(ring, meta.replication)
    const canonical = new Map<string, readonly number[]>()
    const share = (list: readonly number[]): readonly number[] => {
      const k = list.join(',')
      const have = canonical.get(k)
      if (have) return have
      canonical.set(k, list)
      return list
    }
    const replicas = table.map((l) => share(l))
    const others = table.map((l) => share(l.filter((id) => id !== this.nodeId)))
    const local = heldPartitionMaskOf(meta, this.nodeId)
    return {
      store: meta.store,
      version: meta.version,
      allLocal: local.every((x) => x === 1),
      partitionCount: ring.partitionCount,
      local,
      replicas,
      others,
      hasher,
    }
  }

  private load(name: string): Promise<void> {
    if (this.hashers.has(name)) return Promise.resolve()
    let p = this.loading.get(name)
    if (!p) {
      p = createKeyHasher(name)
        .then((h) => void this.hashers.set(name, h))
        .catch((err: unknown) =>
          this.log.error('resp-key-hash-failed', { keyHash: name, error: err instanceof Error ? err.message : String(err) }),
        )
        .finally(() => this.loading.delete(name))
      this.loading.set(name, p)
    }
    return p
  }
}
