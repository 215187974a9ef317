import type { Argv } from 'yargs'
import { clusterVersions } from '../../client/versions'
import { adminToken, adminTokenOption, clusterOptions, loadClusterOption } from '../cluster-options'

export const command = 'versions'
export const describe = 'Live version and backups of a store on every node'

export const builder = (y: Argv) =>
  adminTokenOption(clusterOptions(y)).option('json', { type: 'boolean', default: false, describe: 'one JSON document for scripts' })

export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  const nodes = await clusterVersions(await loadClusterOption(a), a.store, adminToken(a['admin-token']))
  if (a.json) {
    process.stdout.write(JSON.stringify({ store: a.store, nodes }, null, 2) + '\n')
    return
  }
  const rows = [['node', 'version', 'state', 'records', 'size', 'created']]
  for (const n of nodes) {
    if (n.error) rows.push([String(n.nodeId), '-', `error: ${n.error}`, '', '', ''])
    for (const v of n.versions) {
      rows.push([
        String(n.nodeId),
        String(v.version),
        v.live ? 'live' : n.live !== null && v.version > n.live ? 'newer (rolled back from)' : 'backup',
        String(v.records ?? ''),
        v.sizeBytes === undefined ? '' : `${(v.sizeBytes / 1048576).toFixed(1)} MiB`,
        String(v.createdAt ?? ''),
      ])
    }
    if (!n.error && n.versions.length === 0) rows.push([String(n.nodeId), '-', 'no versions', '', '', ''])
  }
  const pushes = nodes.flatMap((n) => {
    const d = n.decisions
    if (!d) return []
    const p = d.prepared
    const last = d.decisions[d.decisions.length - 1]
    const lines: string[] = []
    if (p)
      lines.push(
        `node ${n.nodeId}: ${p.kind} ${p.pushId} of version ${p.version} prepared, ${d.abandoned ? 'abandoned by its pusher: the nodes are deciding it' : 'in progress'}`,
      )
    if (last)
      lines.push(
        `node ${n.nodeId}: last decision: ${last.pushId} version ${last.version}: ${last.outcome ?? `voted ${last.vote ?? 'nothing'}, undecided`}`,
      )
    return lines
  })
  const locks = nodes.flatMap((n) =>
    n.lock
      ? [`node ${n.nodeId}: locked by ${n.lock.owner} until ${n.lock.expiresAt} (${Math.ceil(n.lock.expiresInMs / 1000)} s left)`]
      : [],
  )
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  process.stdout.write(
    rows
      .map((r) =>
        r
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') +
      '\n' +
      [...locks, ...pushes].map((l) => `${l}\n`).join(''),
  )
}
