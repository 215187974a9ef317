import type { Argv } from 'yargs'
import { formatRebalancePlan, planRebalance, rebalanceStore } from '../../client/push/rebalance'
import { StoreError } from '../../common/errors'
import { adminToken, adminTokenOption, clusterOptions, loadClusterOption, readToken, readTokenOption } from '../cluster-options'
import { integerOption } from '../integer-option'

export const command = 'rebalance'
export const describe = 'Move the live version to the layout of --cluster without a build: nodes fetch the partitions they gain from peers'

export const builder = (y: Argv) =>
  readTokenOption(adminTokenOption(clusterOptions(y)))
    .option('throttle', { ...integerOption('throttle'), describe: 'fetch rate per node in bytes/s' })
    .option('timeout', { ...integerOption('timeout'), default: 3600, describe: 'seconds the fetch phase may take' })
    .option('lease', { ...integerOption('lease'), default: 15, describe: 'seconds of the lease on every node, renewed while it runs' })
    .option('dry-run', {
      type: 'boolean',
      default: false,
      describe: 'print per node the partitions gained and lost and the bytes to move; change nothing',
    })

/** Exit codes as `rostore push`: 0 live everywhere, 1 failed (nothing changed), 3 live with failed nodes marked stale. */
export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  const target = { cluster: await loadClusterOption(a), store: a.store, adminToken: adminToken(a['admin-token']), readToken: readToken(a) }
  if (a.lease < 2 || a.lease > 3600) throw new StoreError('RO_BAD_OPTION', `--lease must be from 2 to 3600 seconds, got ${a.lease}`)
  if (a['dry-run']) {
    process.stdout.write(`${formatRebalancePlan((await planRebalance(target)).plan)}\n`)
    return
  }
  const r = await rebalanceStore({
    ...target,
    throttle: a.throttle,
    timeoutMs: a.timeout * 1000,
    leaseMs: a.lease * 1000,
    onEvent: (e) => {
      if (e.type === 'step') process.stderr.write(`rebalance: ${e.message}\n`)
    },
  })
  process.stdout.write(
    [
      `rebalance of ${r.store}: version ${r.rebalance.from} -> ${r.version}: ${r.status} (fetch ${r.fetchSeconds.toFixed(2)} s)`,
      ...r.nodes.map(
        (n) =>
          `  node ${n.nodeId}: ${n.state}${n.fetchedBytes !== undefined ? `, fetched ${n.fetchedBytes} bytes` : ''}${n.error ? `: ${n.error}` : ''}`,
      ),
    ].join('\n') + '\n',
  )
  process.exitCode = r.status === 'live' || r.status === 'already-live' ? 0 : r.status === 'live-with-failures' ? 3 : 1
}
