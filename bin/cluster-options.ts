import { readFile } from 'node:fs/promises'
import type { Argv } from 'yargs'
import { StoreError, errorMessage } from '../common/errors'
import { loadCluster, type Cluster } from '../cluster/cluster'
import { clusterWithTls } from '../client/http'

/** The options every cluster command shares: the cluster file, the store, and how to reach the nodes (TLS). */
export function clusterOptions<T>(y: Argv<T>) {
  return y
    .option('cluster', { type: 'string', demandOption: true, describe: 'cluster.json' })
    .option('store', { type: 'string', demandOption: true, describe: 'store name' })
    .option('tls', { type: 'boolean', default: false, describe: "talk HTTPS to the nodes, trusting the system's CAs" })
    .option('ca-file', {
      type: 'string',
      describe: "PEM file of the CA(s) that signed the nodes' certificates (default: env ROSTORE_CA_FILE); implies --tls",
    })
}

/** cluster.json, with every node reached over HTTPS when --tls, --ca-file or ROSTORE_CA_FILE says so. */
export async function loadClusterOption(a: { cluster: string; tls?: boolean; 'ca-file'?: string }): Promise<Cluster> {
  const cluster = await loadCluster(a.cluster)
  const caFile = a['ca-file'] ?? (process.env.ROSTORE_CA_FILE || undefined)
  if (caFile === undefined) return a.tls ? clusterWithTls(cluster, {}) : cluster
  return clusterWithTls(cluster, { ca: await readCaFile(caFile) })
}

/** A PEM file of CA certificates; RO_BAD_OPTION naming the file when it is unreadable or holds none. */
export async function readCaFile(caFile: string): Promise<Buffer> {
  let ca: Buffer
  try {
    ca = await readFile(caFile)
  } catch (err) {
    throw new StoreError('RO_BAD_OPTION', `cannot read the CA file ${caFile}: ${errorMessage(err)}`, { cause: err })
  }
  if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw new StoreError('RO_BAD_OPTION', `${caFile} holds no PEM certificate`)
  return ca
}

export function adminTokenOption<T>(y: Argv<T>) {
  return y.option('admin-token', { type: 'string', describe: 'admin bearer token (default: env ROSTORE_ADMIN_TOKEN)' })
}

export function adminToken(given: string | undefined): string | undefined {
  return given ?? (process.env.ROSTORE_ADMIN_TOKEN || undefined)
}

/** --read-token, for commands that also read public routes of nodes that require a read token. */
export function readTokenOption<T>(y: Argv<T>) {
  return y.option('read-token', { type: 'string', describe: 'read token, when the nodes require one (default: env ROSTORE_READ_TOKEN)' })
}

export function readToken(a: { readonly 'read-token'?: string }): string | undefined {
  return a['read-token'] ?? (process.env.ROSTORE_READ_TOKEN || undefined)
}
