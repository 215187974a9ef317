import { errorMessage } from '../common/errors'
import type { Cluster } from '../cluster/cluster'
import { ClusterAdmin, onEveryNode } from './cluster-admin'
import type { RemoteVersion } from './node-client'

export interface NodeVersions {
  readonly nodeId: number
  readonly endpoint: string
  readonly live: number | null
  readonly versions: readonly RemoteVersion[]
  readonly error?: string
}

/** What every node holds of a store; an unreachable node is reported, not fatal. */
export async function clusterVersions(cluster: Cluster, store: string, adminToken: string | undefined): Promise<NodeVersions[]> {
  const admin = new ClusterAdmin(cluster, adminToken)
  try {
    const listed = await onEveryNode(admin.ids, (id) => admin.node(id).versions(store))
    return [...listed].map(([id, r]) => {
      const endpoint = admin.node(id).endpoint
      return r.status === 'fulfilled'
        ? { nodeId: id, endpoint, live: r.value.live, versions: r.value.versions }
        : { nodeId: id, endpoint, live: null, versions: [], error: errorMessage(r.reason) }
    })
  } finally {
    admin.close()
  }
}
