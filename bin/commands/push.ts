import type { Argv } from 'yargs'
import { pushStore, type PushEvent, type PushResult } from '../../client/push/push-store'
import { formatPlan, planPush } from '../../client/push/plan'
import { adminToken, adminTokenOption, clusterOptions, loadClusterOption, readToken, readTokenOption } from '../cluster-options'
import { integerOption } from '../integer-option'
import { FETCH_FROM, type FetchFrom } from '../../client/push/partition-sources'
import { redactCredentials } from '../../common/redact'
import { StoreError } from '../../common/errors'

export const command = 'push'
export const describe = 'Fetch a build on every node, then swap it live everywhere (or nowhere)'

export const builder = (y: Argv) =>
  readTokenOption(adminTokenOption(clusterOptions(y)))
    .option('from', { type: 'string', demandOption: true, describe: 'build output: a path or http(s) URL the nodes can read' })
    .option('throttle', { ...integerOption('throttle'), describe: 'fetch rate per node in bytes/s' })
    .option('timeout', { ...integerOption('timeout'), default: 3600, describe: 'seconds the fetch phase may take' })
    .option('allow-failed-nodes', {
      ...integerOption('allow-failed-nodes'),
      default: 0,
      describe:
        'go live when at most this many nodes failed their fetch (below the replication, and a majority of the layout must hold the version)',
    })
    .option('lease', {
      ...integerOption('lease'),
      default: 15,
      describe:
        'seconds of the push lease on every node, renewed while the push runs (a push whose process died frees the store after this)',
    })
    .option('fetch-from', {
      choices: FETCH_FROM,
      default: 'auto' as FetchFrom,
      describe:
        'format 2: auto = each partition read from the build output once, the other replicas take it from a node that has it; source = every byte from the build output; peers = from nodes only',
    })
    .option('force', { type: 'boolean', default: false, describe: 'push even an older version than the live one' })
    .option('dry-run', {
      type: 'boolean',
      default: false,
      describe: 'print per node what moves (partitions, role in the layout) and the bytes it would fetch; change nothing',
    })

/** Exit codes: 0 live everywhere, 1 failed (nothing changed), 3 live with failed nodes marked stale. */
export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  // What the plan and the push both need: the build, the cluster and the tokens.
  const target = {
    cluster: await loadClusterOption(a),
    store: a.store,
    from: a.from,
    adminToken: adminToken(a['admin-token']),
    readToken: readToken(a),
  }
  if (a.lease < 2 || a.lease > 3600) throw new StoreError('RO_BAD_OPTION', `--lease must be from 2 to 3600 seconds, got ${a.lease}`)
  if (a['dry-run']) {
    process.stdout.write(`${formatPlan(await planPush({ ...target, fetchFrom: a['fetch-from'] }))}\n`)
    return
  }
  const result = await pushStore({
    ...target,
    throttle: a.throttle,
    timeoutMs: a.timeout * 1000,
    allowFailedNodes: a['allow-failed-nodes'],
    force: a.force,
    fetchFrom: a['fetch-from'],
    leaseMs: a.lease * 1000,
    onEvent: progressPrinter(),
  })
  printSummary(result)
  process.exitCode = result.status === 'live' || result.status === 'already-live' ? 0 : result.status === 'live-with-failures' ? 3 : 1
}

function progressPrinter(): (e: PushEvent) => void {
  const last = new Map<number, number>()
  return (e) => {
    if (e.type === 'step') return void process.stderr.write(`push: ${redactCredentials(e.message)}\n`)
    const now = Date.now()
    if (now - (last.get(e.nodeId) ?? 0) < 1000 && e.bytesDone < e.bytesTotal) return
    last.set(e.nodeId, now)
    const pct = e.bytesTotal > 0 ? ((100 * e.bytesDone) / e.bytesTotal).toFixed(0) : '?'
    process.stderr.write(
      `push:   node ${e.nodeId}: ${pct}% of ${(e.bytesTotal / 1048576).toFixed(1)} MiB at ${(e.rate / 1048576).toFixed(1)} MiB/s\n`,
    )
  }
}

function printSummary(r: PushResult): void {
  const lines = [
    `push of ${r.store} version ${r.version}: ${r.status} (fetch ${r.fetchSeconds.toFixed(2)} s, swap ${(r.swapSeconds * 1000).toFixed(1)} ms)`,
  ]
  for (const n of r.nodes) {
    lines.push(
      `  node ${n.nodeId}: ${n.state}${n.previous !== undefined && n.previous !== null ? ` (was ${n.previous})` : ''}${n.fetchedBytes !== undefined ? `, fetched ${n.fetchedBytes} bytes` : ''}${n.error ? `: ${n.error}` : ''}`,
    )
    const m = n.partitions
    if (m !== undefined && (m.byPatch.length > 0 || m.fellBack.length > 0))
      lines.push(
        `    partitions by patch [${m.byPatch.join(',')}], by full files [${m.byFiles.join(',')}], ${m.bytes} bytes moved` +
          m.fellBack.map((f) => `\n    partition ${f.partition}: patch failed (${f.reason}), fetched whole`).join(''),
      )
  }
  process.stdout.write(lines.join('\n') + '\n')
}
