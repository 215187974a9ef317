import { buildRing, heldPartitions, replicaTable } from '../../cluster/routing'
import type { ClusterLayoutNode } from '../../cluster/layout'
import type { VersionManifest } from '../../formats/store/layout/partition-files'

/**
 * Where a node takes the partitions of a format-2 version from (fetcher/partition-fetch.ts).
 * For a push: `source`, every byte from the build output (format 1's behaviour); `auto`,
 * each partition read from the build output once, by its first replica, the other
 * replicas taking it from that node; `peers`, from nodes that hold it only.
 */
export { FETCH_FROM, type FetchFrom } from '../../fetcher/partition-fetch'
import type { FetchFrom } from '../../fetcher/partition-fetch'

/** "Node `nodeId` holds these partitions of version `version`": a node may fetch them from it. */
export interface PeerOffer {
  readonly nodeId: number
  readonly version: number
  readonly partitions: readonly number[]
}

/**
 * The peers node `nodeId` may take its partitions of a pushed version from, in `auto`
 * mode: the first replica of each partition it holds as a later replica (that node reads
 * it from the build output during the same push). Empty in `source` mode.
 */
export function pushPeerOffers(manifest: VersionManifest, nodeId: number, fetchFrom: FetchFrom): PeerOffer[] {
  if (fetchFrom === 'source') return []
  const replicas = replicaTable(buildRing(manifest.layout), manifest.replication)
  const byPeer = new Map<number, number[]>()
  for (const p of heldPartitions(buildRing(manifest.layout), manifest.replication, nodeId)) {
    const first = replicas[p]![0]!
    if (first !== nodeId) byPeer.set(first, [...(byPeer.get(first) ?? []), p])
  }
  return [...byPeer].map(([peer, partitions]) => ({ nodeId: peer, version: manifest.version, partitions }))
}

/**
 * The peers holding each partition a node gains when a version's layout changes from
 * `before` to the manifest's: every node that held the partition in version `version`
 * under `before`, master first. A partition is offered by several nodes, so one that is
 * down or slow is routed around.
 */
export function layoutChangeOffers(
  manifest: VersionManifest,
  before: { readonly layout: readonly ClusterLayoutNode[]; readonly replication: number; readonly version: number },
  nodeId: number,
): PeerOffer[] {
  const oldReplicas = replicaTable(buildRing(before.layout), before.replication)
  const had = new Set(heldPartitions(buildRing(before.layout), before.replication, nodeId))
  const byPeer = new Map<number, number[]>()
  for (const p of heldPartitions(buildRing(manifest.layout), manifest.replication, nodeId)) {
    if (had.has(p)) continue
    for (const holder of oldReplicas[p]!) if (holder !== nodeId) byPeer.set(holder, [...(byPeer.get(holder) ?? []), p])
  }
  return [...byPeer].map(([peer, partitions]) => ({ nodeId: peer, version: before.version, partitions }))
}

/** Partitions a node gains and loses between two layouts of the same ring size. */
export function partitionMoves(
  before: { readonly layout: readonly ClusterLayoutNode[]; readonly replication: number },
  after: { readonly layout: readonly ClusterLayoutNode[]; readonly replication: number },
  nodeId: number,
): { readonly gained: number[]; readonly lost: number[] } {
  const inLayout = (l: readonly ClusterLayoutNode[]): boolean => l.some((n) => n.id === nodeId)
  const had = inLayout(before.layout) ? heldPartitions(buildRing(before.layout), before.replication, nodeId) : []
  const has = inLayout(after.layout) ? heldPartitions(buildRing(after.layout), after.replication, nodeId) : []
  return { gained: has.filter((p) => !had.includes(p)), lost: had.filter((p) => !has.includes(p)) }
}
