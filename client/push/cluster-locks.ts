import { errorMessage } from '../../common/errors'
import type { Cluster } from '../../cluster/cluster'
import { ClusterAdmin, onEveryNode } from '../cluster-admin'

export interface BrokenLock {
  readonly nodeId: number
  /** The push that held the lease, null when the node had none; absent when the node did not answer. */
  readonly owner?: string | null
  readonly error?: string
}

/**
 * Breaks the push lease of a store on every node (`rostore unlock`), whoever holds it. For a
 * push whose process is gone and whose lease the operator will not wait out; a push still
 * running finds its lease lost at its next renewal and stops before it swaps.
 */
export async function breakClusterLocks(cluster: Cluster, store: string, adminToken: string | undefined): Promise<BrokenLock[]> {
  const admin = new ClusterAdmin(cluster, adminToken)
  try {
    const broken = await onEveryNode(admin.ids, (id) => admin.node(id).breakLock(store))
    return [...broken].map(([nodeId, r]) =>
      r.status === 'fulfilled' ? { nodeId, owner: r.value } : { nodeId, error: errorMessage(r.reason) },
    )
  } finally {
    admin.close()
  }
}
