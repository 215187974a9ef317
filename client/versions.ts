import { errorMessage } from '../common/errors'
import type { Cluster } from '../cluster/cluster'
import { ClusterAdmin, onEveryNode } from './cluster-admin'
import type { RemoteDecisions, RemoteLease, RemoteVersion } from './node-client'

export interface NodeVersions {
  readonly nodeId: number
  readonly endpoint: string
  readonly live: number | null
  readonly versions: readonly RemoteVersion[]
  /** The push lease on the store, when a push holds it (or held it and its process died). */
  readonly lock?: RemoteLease
  /** The push (or rollback) the node prepared and waits to see decided, and its last decisions. */
  readonly decisions?: RemoteDecisions
  readonly error?: string
}

/** What every node holds of a store; an unreachable node is reported, not fatal. */
export async function clusterVersions(cluster: Cluster, store: string, adminToken: string | undefined): Promise<NodeVersions[]> {
  const admin = new ClusterAdmin(cluster, adminToken)
  try {
    const listed = await onEveryNode(admin.ids, async (id) => {
      const node = admin.node(id)
      const [v, lock, decisions] = await Promise.all([
        node.versions(store),
        node.lockInfo(store),
        node.decisions(store).catch(() => undefined),
      ])
      return { ...v, ...(lock ? { lock } : {}), ...(decisions ? { decisions } : {}) }
    })
    return [...listed].map(([id, r]) => {
      const endpoint = admin.node(id).endpoint
      return r.status === 'fulfilled'
        ? { nodeId: id, endpoint, ...r.value }
        : { nodeId: id, endpoint, live: null, versions: [], error: errorMessage(r.reason) }
    })
  } finally {
    admin.close()
  }
}
