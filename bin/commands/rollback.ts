import type { Argv } from 'yargs'
import { rollbackCluster } from '../../client/push/rollback'
import { adminToken, adminTokenOption, clusterOptions, loadClusterOption } from '../cluster-options'
import { integerOption } from '../integer-option'

export const command = 'rollback'
export const describe = 'Every node back to the previous version (or --to one all nodes hold)'

export const builder = (y: Argv) =>
  adminTokenOption(clusterOptions(y)).option('to', { ...integerOption('to'), describe: 'version to go back to' })

export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  const r = await rollbackCluster({
    cluster: await loadClusterOption(a),
    store: a.store,
    to: a.to,
    adminToken: adminToken(a['admin-token']),
  })
  process.stdout.write(
    [`rolled ${r.store} back to version ${r.to}`, ...r.nodes.map((n) => `  node ${n.nodeId}: ${n.from ?? 'none'} -> ${n.to}`)].join('\n') +
      '\n',
  )
}
