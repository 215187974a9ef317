import type { Argv } from 'yargs'

/** The options every cluster command shares. */
export function clusterOptions<T>(y: Argv<T>) {
  return y
    .option('cluster', { type: 'string', demandOption: true, describe: 'cluster.json' })
    .option('store', { type: 'string', demandOption: true, describe: 'store name' })
}

export function adminTokenOption<T>(y: Argv<T>) {
  return y.option('admin-token', { type: 'string', describe: 'admin bearer token (default: env ROSTORE_ADMIN_TOKEN)' })
}

export function adminToken(given: string | undefined): string | undefined {
  return given ?? (process.env.ROSTORE_ADMIN_TOKEN || undefined)
}
