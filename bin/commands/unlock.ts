import type { Argv } from 'yargs'
import { breakClusterLocks } from '../../client/push/cluster-locks'
import { adminToken, adminTokenOption, clusterOptions, loadClusterOption } from '../cluster-options'

export const command = 'unlock'
export const describe = "Break a store's push lease on every node (for a push whose process is gone)"

export const builder = (y: Argv) => adminTokenOption(clusterOptions(y))

/** Exit code 1 when a node did not answer (its lease, if any, lapses by itself). */
export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  const nodes = await breakClusterLocks(await loadClusterOption(a), a.store, adminToken(a['admin-token']))
  const lines = nodes.map((n) =>
    n.error !== undefined
      ? `  node ${n.nodeId}: error: ${n.error}`
      : `  node ${n.nodeId}: ${n.owner ? `broke the lease of ${n.owner}` : 'not locked'}`,
  )
  process.stdout.write([`unlock ${a.store}:`, ...lines].join('\n') + '\n')
  if (nodes.some((n) => n.error !== undefined)) process.exitCode = 1
}
