import { StoreError, errorMessage } from '../../common/errors'
import { buildRing } from '../../cluster/routing'
import { clusterLayout, type Cluster } from '../../cluster/cluster'
import { validateManifest } from '../../formats/store/layout/manifest-io'
import type { VersionManifest } from '../../formats/store/layout/partition-files'
import { ClusterAdmin, onEveryNode } from '../cluster-admin'
import { layoutChangeOffers, partitionMoves } from './partition-sources'
import { pushVersion, type PushOptions, type PushResult } from './push-store'
import { manifestNodes } from './source-manifests'

export interface RebalanceOptions extends Omit<PushOptions, 'from' | 'fetchFrom' | 'force'> {
  /** The new cluster file: the layout the store moves to (the same partition count). */
  readonly cluster: Cluster
}

export interface NodeMoves {
  readonly nodeId: number
  readonly gained: readonly number[]
  readonly lost: readonly number[]
  /** Bytes of the gained partitions' files: what the node fetches from its peers. */
  readonly bytes: number
}

export interface RebalancePlan {
  readonly store: string
  /** The live version, and the new version made of its files in the new layout. */
  readonly from: number
  readonly to: number
  readonly nodes: readonly NodeMoves[]
  /** The least any rebalance between the two layouts moves: every gained partition's bytes, once per gaining node. */
  readonly bytes: number
}

/**
 * A new version of the live data in a new layout, without a build: the live version's
 * partition files (format 2) keep their bytes, each node fetches only the partitions it
 * gains, from the nodes that hold them, and all swap together through the push's decision
 * path; nodes that leave keep the old version as a backup, marked stale. A rollback (with
 * either cluster file) goes back like after any push.
 */
export async function rebalanceStore(o: RebalanceOptions): Promise<PushResult & { readonly rebalance: RebalancePlan }> {
  const { plan, manifest, before } = await planRebalance(o)
  o.onEvent?.({
    type: 'step',
    message: `rebalancing ${o.store}: version ${plan.from} becomes version ${plan.to} in the new layout, ${plan.bytes} bytes to move between nodes`,
  })
  const result = await pushVersion(
    o,
    { nodes: manifestNodes(manifest), manifest },
    { fetchFrom: 'peers', manifest, offers: (id) => layoutChangeOffers(manifest, before, id) },
  )
  return { ...result, rebalance: plan }
}

/** What `rostore rebalance --dry-run` prints; changes nothing. */
export async function planRebalance(
  o: Pick<RebalanceOptions, 'cluster' | 'store' | 'adminToken'>,
): Promise<{ plan: RebalancePlan; manifest: VersionManifest; before: VersionManifest }> {
  const admin = new ClusterAdmin(o.cluster, o.adminToken)
  try {
    const asked = await onEveryNode(admin.ids, (id) => admin.node(id).versions(o.store))
    const lives = new Map<number, number>()
    let newest = 0
    for (const [id, r] of asked) {
      if (r.status === 'rejected') continue
      if (r.value.live !== null) lives.set(id, r.value.live)
      newest = Math.max(newest, ...r.value.versions.map((v) => v.version))
    }
    const live = new Set(lives.values())
    if (live.size === 0) throw new StoreError('RO_NOT_FOUND', `no node of the cluster file serves ${o.store}`)
    if (live.size > 1)
      throw new StoreError(
        'RO_CONFLICT',
        `nodes serve different versions of ${o.store} (${[...lives].map(([id, v]) => `node ${id}: ${v}`).join(', ')}); let the last push finish first`,
      )
    const version = [...live][0]!
    const before = await liveManifest(admin, [...lives.keys()], o.store, version)
    const layout = clusterLayout(o.cluster)
    const partitions = buildRing(layout).partitionCount
    if (partitions !== before.partitions)
      throw new StoreError(
        'RO_BAD_REQUEST',
        `the new layout has ${partitions} partitions, version ${version} of ${o.store} has ${before.partitions}: a rebalance moves partitions between nodes, it cannot change their number (build again for that)`,
      )
    if (before.replication > layout.length)
      throw new StoreError('RO_BAD_REQUEST', `the new layout has ${layout.length} nodes, fewer than the replication ${before.replication}`)
    const manifest: VersionManifest = { ...before, version: newest + 1, layout }
    const ids = [...new Set([...before.layout, ...layout].map((n) => n.id))].sort((a, b) => a - b)
    const nodes = ids.map((nodeId): NodeMoves => {
      const m = partitionMoves(before, manifest, nodeId)
      const bytes = m.gained.reduce((a, p) => a + manifest.partitionFiles[p]!.files.reduce((s, f) => s + f.size, 0), 0)
      return { nodeId, ...m, bytes }
    })
    const plan = { store: o.store, from: version, to: manifest.version, nodes, bytes: nodes.reduce((a, n) => a + n.bytes, 0) }
    return { plan, manifest, before }
  } finally {
    admin.close()
  }
}

/** The live version's whole manifest, from the first node that gives it. */
async function liveManifest(admin: ClusterAdmin, ids: readonly number[], store: string, version: number): Promise<VersionManifest> {
  const errors: string[] = []
  for (const id of ids) {
    try {
      return validateManifest(await admin.node(id).versionManifest(store, version), `node ${id}: version ${version}'s manifest`)
    } catch (err) {
      errors.push(`node ${id}: ${errorMessage(err)}`)
    }
  }
  throw new StoreError(
    'RO_BAD_REQUEST',
    `cannot read the manifest of version ${version} of ${store} from any node (${errors.join('; ')}); a rebalance needs a version built in format 2 (rostore build --layout partitions)`,
  )
}

/** The plan as `rostore rebalance --dry-run` prints it. */
export function formatRebalancePlan(p: RebalancePlan): string {
  const mib = (b: number): string => (b / 1048576).toFixed(2)
  return [
    `rebalance of ${p.store}: version ${p.from} becomes version ${p.to} in the new layout`,
    ...p.nodes.map(
      (n) =>
        `  node ${n.nodeId}: gains [${n.gained.join(',')}], loses [${n.lost.join(',')}], fetches ${n.bytes} bytes (${mib(n.bytes)} MiB) from peers`,
    ),
    `  total: ${p.bytes} bytes to move (${mib(p.bytes)} MiB)`,
  ].join('\n')
}
