import { StoreError, errorMessage, isStoreError, type ErrorCode } from '../common/errors'
import { clusterLayout, type Cluster } from '../cluster/cluster'
import { ClusterAdmin, onEveryNode } from './cluster-admin'
import { randomUUID } from 'node:crypto'
import { nextSeq, writePushRecords } from './push-records'
import { decideCluster } from './push-decide'
import { PushLease } from './push-lease'

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
 * checked on all of them first, then the rollback is decided by the nodes' votes like a
 * push, and each node rolls back itself. The file's layout must be the target version's (after a push to a new
 * layout, the old file): nodes it lists without partitions (they joined with the version
 * rolled back from) are marked stale afterwards, keeping that version as a backup, and
 * routing goes back to the old nodes, whose stale marks from leaving are lifted.
 */
export async function rollbackCluster(o: RollbackOptions): Promise<RollbackResult> {
  const admin = new ClusterAdmin(o.cluster, o.adminToken)
  // A rollback holds the store like a push: the two never interleave.
  const lease = new PushLease(admin, o.store, `rollback-${randomUUID()}`)
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
    for (const id of ids) {
      await lease.take(id).catch((err: unknown) => {
        throw isStoreError(err, 'RO_CONFLICT')
          ? new StoreError('RO_CONFLICT', `nothing changed: a push of ${o.store} is in progress (${errorMessage(err)})`)
          : err
      })
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

    // Decided like a push (docs/RELIABILITY.md §4): once a majority of the nodes voted
    // for it, every node goes to `to` by itself, even if this process dies now. Nodes
    // already on the target stay as they are (a cluster left mixed is realigned with --to).
    lease.assertHeld('the decision')
    const seq = await nextSeq(admin, ids, o.store)
    const decided = await decideCluster(
      admin,
      o.store,
      { pushId: lease.owner, kind: 'rollback', version: to, participants: ids, missed: [], seq },
      new Set(),
      () => undefined,
    )
    if (decided.outcome !== 'commit')
      throw new StoreError(
        failureCode(decided.errors, 'RO_CONFLICT'),
        `nothing changed: the rollback was not decided: ${decided.reason ?? 'no reason'}`,
      )
    const failed = [...decided.applied].filter(([, r]) => r.status === 'rejected')
    if (failed.length > 0) {
      throw new StoreError(
        failureCode(
          failed.map(([, r]) => (r as PromiseRejectedResult).reason),
          'RO_UNAVAILABLE',
        ),
        `rollback decided; ${failed.map(([id, r]) => `node ${id}: ${errorMessage((r as PromiseRejectedResult).reason)}`).join('; ')}: those nodes go to version ${to} by themselves once they can (back up, disk space freed)`,
      )
    }
    // The rollback is the cluster's last decision: it replaces the last push's record, so
    // no node takes itself for behind a push that was rolled back.
    await writePushRecords(admin, { store: o.store, version: to, missed: [], nodes: ids }, seq)
    // Back in the layout of `to`: a stale mark from leaving a later layout is lifted. Nodes
    // outside it stop serving (best effort: one that is down serves nothing anyway, and a
    // client following the layout does not ask it).
    await onEveryNode(ids, (id) => admin.node(id).setStale(o.store, undefined))
    await onEveryNode(outside, (id) => admin.node(id).setStale(o.store, `not in the layout of version ${to}: kept as a backup`))
    return { store: o.store, to, nodes: ids.map((id) => ({ nodeId: id, from: states.get(id)!.live, to })) }
  } finally {
    await lease.release()
    admin.close()
  }
}

/**
 * The code of a rollback that some nodes could not take: a full disk or a storage error on
 * a node is said as such (the operator has something to fix there); otherwise `other`.
 */
function failureCode<C extends ErrorCode>(reasons: readonly unknown[], other: C): 'RO_NO_SPACE' | 'RO_IO' | C {
  if (reasons.some((r) => isStoreError(r, 'RO_NO_SPACE'))) return 'RO_NO_SPACE'
  if (reasons.some((r) => isStoreError(r, 'RO_IO'))) return 'RO_IO'
  return other
}
