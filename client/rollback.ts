import { StoreError, errorMessage, isStoreError } from '../common/errors'
import { clusterLayout, type Cluster } from '../cluster/cluster'
import { ClusterAdmin, onEveryNode } from './cluster-admin'
import { writePushRecords } from './push-records'

export interface RollbackOptions {
  readonly cluster: Cluster
  readonly store: string
  /** A version every node holds; default: the version before the live one. */
  readonly to?: number
  readonly adminToken?: string
}

export interface RollbackResult {
  readonly store: string
  readonly to: number
  readonly nodes: readonly { readonly nodeId: number; readonly from: number | null; readonly to: number }[]
}

/**
 * Every node of the file's layout back to one version, or nothing changes: targets are
 * checked on all of them first, and a node whose rollback fails makes the others swap
 * forward again. The file's layout must be the target version's (after a push to a new
 * layout, the old file): nodes it lists without partitions (they joined with the version
 * rolled back from) are marked stale afterwards, keeping that version as a backup, and
 * routing goes back to the old nodes, whose stale marks from leaving are lifted.
 */
export async function rollbackCluster(o: RollbackOptions): Promise<RollbackResult> {
  const admin = new ClusterAdmin(o.cluster, o.adminToken)
  try {
    const layoutIds = new Set(clusterLayout(o.cluster).map((n) => n.id))
    const ids = admin.ids.filter((id) => layoutIds.has(id))
    const outside = admin.ids.filter((id) => !layoutIds.has(id))
    const listed = await onEveryNode(ids, (id) => admin.node(id).versions(o.store))
    const unreachable = [...listed].filter(([, r]) => r.status === 'rejected')
    if (unreachable.length > 0) {
      throw new StoreError(
        'RO_UNAVAILABLE',
        `nothing changed: ${unreachable.map(([id, r]) => `node ${id}: ${errorMessage((r as PromiseRejectedResult).reason)}`).join('; ')}`,
      )
    }
    const states = new Map(
      [...listed].map(([id, r]) => [id, (r as PromiseFulfilledResult<{ live: number | null; versions: { version: number }[] }>).value]),
    )
    const targets = new Map<number, number>()
    const problems: string[] = []
    for (const [id, s] of states) {
      const held = s.versions.map((v) => v.version)
      const target = o.to ?? Math.max(-1, ...held.filter((v) => s.live !== null && v < s.live))
      if (o.to !== undefined && !held.includes(o.to))
        problems.push(`node ${id} does not hold version ${o.to} (holds ${held.join(', ') || 'none'})`)
      else if (target < 0) problems.push(`node ${id} has no version older than its live ${s.live ?? 'none'}`)
      else targets.set(id, target)
    }
    if (problems.length > 0) throw new StoreError('RO_NOT_FOUND', `nothing changed: ${problems.join('; ')}`)
    const distinct = new Set(targets.values())
    if (distinct.size !== 1)
      throw new StoreError(
        'RO_CONFLICT',
        `nothing changed: nodes would roll back to different versions (${[...targets].map(([id, v]) => `node ${id}: ${v}`).join(', ')}); name one with --to`,
      )
    const to = [...distinct][0]!

    // Nodes already on the target stay as they are: a cluster left mixed by a failed push
    // (a node that died after its flip) is realigned with --to.
    const done = await onEveryNode(
      ids.filter((id) => states.get(id)!.live !== to),
      (id) => admin.node(id).rollback(o.store, to),
    )
    const failed = [...done].filter(([, r]) => r.status === 'rejected')
    if (failed.length > 0) {
      const ok = [...done].filter(([, r]) => r.status === 'fulfilled').map(([id]) => id)
      await onEveryNode(ok, (id) => admin.node(id).swap(o.store, states.get(id)!.live!))
      throw new StoreError(
        failureCode(failed.map(([, r]) => (r as PromiseRejectedResult).reason)),
        `rollback failed on ${failed.map(([id, r]) => `node ${id}: ${errorMessage((r as PromiseRejectedResult).reason)}`).join('; ')}; the other nodes were swapped back`,
      )
    }
    // The rollback is the cluster's last decision: it replaces the last push's record, so
    // no node takes itself for behind a push that was rolled back.
    await writePushRecords(admin, { store: o.store, version: to, missed: [], nodes: ids })
    // Back in the layout of `to`: a stale mark from leaving a later layout is lifted. Nodes
    // outside it stop serving (best effort: one that is down serves nothing anyway, and a
    // client following the layout does not ask it).
    await onEveryNode(ids, (id) => admin.node(id).setStale(o.store, undefined))
    await onEveryNode(outside, (id) => admin.node(id).setStale(o.store, `not in the layout of version ${to}: kept as a backup`))
    return { store: o.store, to, nodes: ids.map((id) => ({ nodeId: id, from: states.get(id)!.live, to })) }
  } finally {
    admin.close()
  }
}

/**
 * The code of a rollback that failed on some nodes: a full disk or a storage error on a node
 * is said as such (the operator has something to fix there); anything else stays a conflict.
 */
function failureCode(reasons: readonly unknown[]): 'RO_NO_SPACE' | 'RO_IO' | 'RO_CONFLICT' {
  if (reasons.some((r) => isStoreError(r, 'RO_NO_SPACE'))) return 'RO_NO_SPACE'
  if (reasons.some((r) => isStoreError(r, 'RO_IO'))) return 'RO_IO'
  return 'RO_CONFLICT'
}
