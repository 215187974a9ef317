import { StoreError, errorMessage, isStoreError, type ErrorCode } from '../../common/errors'
import { clusterLayout, type Cluster } from '../../cluster/cluster'
import { ClusterAdmin, onEveryNode } from '../cluster-admin'
import type { NodeClient, RemoteVersion } from '../node-client'
import { randomUUID } from 'node:crypto'
import { nextSeq, writePushRecords } from './records'
import { decideCluster } from './decide'
import { PushLease } from './lease'

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
  /** Nodes outside the target version's layout: they keep their version as a backup, marked stale. */
  readonly backups: readonly number[]
}

type NodeVersions = Awaited<ReturnType<NodeClient['versions']>>
type Layout = NonNullable<RemoteVersion['layout']>

/**
 * The version to go back to, the nodes of its layout (they roll back) and the other nodes
 * serving the store (they keep their version, marked stale). Refuses, changing nothing,
 * whatever would leave nodes on two versions: a node of either layout that cannot be asked
 * or is missing from the cluster file, a node of the target's layout without the target.
 */
export function rollbackTarget(
  o: Pick<RollbackOptions, 'cluster' | 'store' | 'to'>,
  states: ReadonlyMap<number, NodeVersions>,
  unreachable: ReadonlyMap<number, string>,
): { readonly to: number; readonly participants: number[]; readonly outside: number[]; readonly partitioned: boolean } {
  const lives = [...states.values()].map((s) => s.live).filter((v): v is number => v !== null)
  if (lives.length === 0 && unreachable.size > 0)
    throw new StoreError('RO_UNAVAILABLE', `nothing changed: ${[...unreachable].map(([id, why]) => `node ${id}: ${why}`).join('; ')}`)
  if (lives.length === 0 && o.to === undefined) throw new StoreError('RO_NOT_FOUND', `nothing changed: no node serves ${o.store}`)
  const newest = Math.max(...lives)
  const held = (id: number): number[] => states.get(id)?.versions.map((v) => v.version) ?? []
  const everHeld = [...new Set([...states.keys()].flatMap(held))].sort((a, b) => b - a)
  const to = o.to ?? everHeld.find((v) => v < newest)
  if (to === undefined) throw new StoreError('RO_NOT_FOUND', `nothing changed: no node holds a version of ${o.store} older than ${newest}`)
  if (!everHeld.includes(to)) throw new StoreError('RO_NOT_FOUND', `nothing changed: no node holds version ${to} of ${o.store}`)
  function layoutOf(v: number): Layout | undefined {
    for (const s of states.values()) {
      const l = s.versions.find((x) => x.version === v)?.layout
      if (l !== undefined) return l
    }
    return undefined
  }
  // Older nodes do not say a version's layout: then the cluster file's is the target's, as before.
  const toLayout = layoutOf(to) ?? clusterLayout(o.cluster)
  const participants = toLayout.map((n) => n.id).sort((a, b) => a - b)
  const inFile = new Set(o.cluster.nodes.map((n) => n.id))
  // Nodes of the newest live version's layout on another version: a split (a push not
  // finished yet); nodes outside it on an older version are backups of a layout change.
  const newestLayout = layoutOf(newest)
  const split = [...states].filter(([id, s]) => s.live !== null && s.live !== newest && (newestLayout?.some((n) => n.id === id) ?? true))
  if (o.to === undefined && split.length > 0)
    throw new StoreError(
      'RO_CONFLICT',
      `nothing changed: nodes serve different versions (${[...states]
        .filter(([, s]) => s.live !== null)
        .map(([id, s]) => `node ${id}: ${s.live}`)
        .join(', ')}); name one with --to`,
    )
  const problems: string[] = []
  const liveLayouts = [...new Set(lives)].map((v) => ({ v, layout: layoutOf(v) ?? [] }))
  for (const { v, layout } of liveLayouts) {
    const missing = layout.map((n) => n.id).filter((id) => !inFile.has(id))
    if (missing.length > 0)
      problems.push(
        `nodes ${missing.join(', ')} serve version ${v} and are not in this cluster file; they would go on serving it: use the cluster file of version ${v} (or list them, address only)`,
      )
  }
  for (const id of participants) {
    if (!inFile.has(id)) problems.push(`node ${id} of version ${to}'s layout is not in this cluster file: list it (address only)`)
    else if (unreachable.has(id)) problems.push(`node ${id}: ${unreachable.get(id)}`)
    else if (!held(id).includes(to)) problems.push(`node ${id} does not hold version ${to} (holds ${held(id).join(', ') || 'none'})`)
  }
  const serving = [...states].filter(([id, s]) => s.live !== null && !participants.includes(id)).map(([id]) => id)
  for (const { layout } of liveLayouts)
    for (const n of layout)
      if (unreachable.has(n.id) && !participants.includes(n.id)) problems.push(`node ${n.id}: ${unreachable.get(n.id)}`)
  if (problems.length > 0)
    throw new StoreError(
      problems.some((p) => p.includes('does not hold')) ? 'RO_NOT_FOUND' : 'RO_UNAVAILABLE',
      `nothing changed: ${[...new Set(problems)].join('; ')}`,
    )
  const partitioned = [...states.values()].some((s) => s.versions.some((x) => x.version === to && x.formatMajor === 2))
  return {
    to,
    partitioned,
    participants,
    outside: [...states.keys()].filter((id) => !participants.includes(id) && (serving.includes(id) || held(id).length > 0)),
  }
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
    const listed = await onEveryNode(admin.ids, (id) =>
      admin
        .node(id)
        .versions(o.store)
        .catch((err: unknown) => (isStoreError(err, 'RO_NOT_FOUND') ? { live: null, versions: [] } : Promise.reject(err))),
    )
    const states = new Map<number, NodeVersions>()
    const unreachable = new Map<number, string>()
    for (const [id, r] of listed) {
      if (r.status === 'fulfilled') states.set(id, r.value)
      else unreachable.set(id, errorMessage(r.reason))
    }
    const target = rollbackTarget(o, states, unreachable)
    const ids = target.participants
    for (const id of ids) {
      await lease.take(id).catch((err: unknown) => {
        throw isStoreError(err, 'RO_CONFLICT')
          ? new StoreError('RO_CONFLICT', `nothing changed: a push of ${o.store} is in progress (${errorMessage(err)})`)
          : err
      })
    }
    const outside = target.outside
    const to = target.to

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
    await writePushRecords(admin, { store: o.store, version: to, missed: [], nodes: ids, partitioned: target.partitioned }, seq)
    // Back in the layout of `to`: a stale mark from leaving a later layout is lifted. Nodes
    // outside it stop serving (best effort: one that is down serves nothing anyway, and a
    // client following the layout does not ask it).
    await onEveryNode(ids, (id) => admin.node(id).setStale(o.store, undefined))
    await onEveryNode(outside, (id) => admin.node(id).setStale(o.store, `not in the layout of version ${to}: kept as a backup`))
    return { store: o.store, to, nodes: ids.map((id) => ({ nodeId: id, from: states.get(id)!.live, to })), backups: outside }
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
