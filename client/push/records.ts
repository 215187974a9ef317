import { isStoreError } from '../../common/errors'
import { redactCredentials } from '../../common/redact'
import { onEveryNode, type ClusterAdmin } from '../cluster-admin'
import type { RemotePushRecord } from '../node-client'

export interface PushRecordPlan {
  readonly store: string
  /** The version now live on `nodes`. */
  readonly version: number
  /** Nodes that should hold it and do not (they missed the push). */
  readonly missed: readonly number[]
  /**
   * Where a node that missed it fetches it by itself; absent after a rollback. Kept with
   * its credentials (user info, a presigned query) removed: a record is stored on every
   * node and shown to admins; a node cannot repair from such a source by itself.
   */
  readonly source?: string
  /** Nodes that took the push: each keeps the record (its peers read it when they restart). */
  readonly nodes: readonly number[]
  /** The version is in partition files: a node that missed it repairs from its peers. */
  readonly partitioned?: boolean
}

/**
 * After a push or rollback went live, every node that took it keeps its record (the
 * version, the nodes that missed it, the source), and so does every node that missed it
 * and is reachable: that node then refuses reads of the store until it holds the version
 *. A node that was down learns it from its peers when it restarts.
 *
 * The record's seq is one more than the highest seq the nodes hold, and at least the
 * current time in ms: the newest push wins wherever records meet. Returns the nodes that
 * could not be given the record (reported, not fatal: the others have it).
 */
export async function writePushRecords(admin: ClusterAdmin, plan: PushRecordPlan, seqGiven?: number): Promise<Map<number, string>> {
  const seq = seqGiven ?? (await nextSeq(admin, plan.nodes, plan.store))
  const record: RemotePushRecord = {
    version: plan.version,
    missed: [...plan.missed],
    ...(plan.source === undefined ? {} : { source: redactCredentials(plan.source) }),
    seq,
    at: new Date().toISOString(),
    holders: [...plan.nodes],
    ...(plan.partitioned === true ? { partitioned: true } : {}),
  }
  const targets = [...new Set([...plan.nodes, ...plan.missed])]
  const written = await onEveryNode(targets, (id) => admin.node(id).putPushRecord(plan.store, record))
  const failures = new Map<number, string>()
  for (const [id, r] of written) {
    // A missed node that is down learns the record from its peers at its next start.
    if (r.status === 'rejected' && !(plan.missed.includes(id) && isStoreError(r.reason, 'RO_UNAVAILABLE'))) {
      failures.set(id, r.reason instanceof Error ? r.reason.message : String(r.reason))
    }
  }
  return failures
}

/** One more than the highest record seq the nodes hold of the store, and at least the current time in ms. */
export async function nextSeq(admin: ClusterAdmin, ids: readonly number[], store: string): Promise<number> {
  const held = await onEveryNode(ids, (id) => admin.node(id).pushRecords())
  let seq = Date.now()
  for (const r of held.values()) {
    const have = r.status === 'fulfilled' ? r.value.stores[store]?.record?.seq : undefined
    if (have !== undefined && have >= seq) seq = have + 1
  }
  return seq
}
