import { writeFile } from 'node:fs/promises'
import { buildVersion, numberedRecords } from './build-version'
import { join } from 'node:path'
import type { Cluster } from '../../cluster/cluster'
import { freePort, LOOPBACK } from './node-process'

/**
 * Cluster files and builds for tests that change the cluster's layout: one set of
 * loopback addresses, several layouts over them, and builds of the same keys per version.
 */
export interface NodePorts {
  readonly id: number
  readonly port: number
  readonly respPort: number
}

/** Free HTTP and RESP ports for nodes 0..count-1. */
export async function nodePorts(count: number): Promise<NodePorts[]> {
  const out: NodePorts[] = []
  for (let id = 0; id < count; id++) out.push({ id, port: await freePort(), respPort: await freePort() })
  return out
}

/**
 * Writes `dir/file`: the nodes of `addrs` (all, or the ids in `listed`); nodes 0..owners-1
 * share `partitions` round-robin, the others are listed with no partitions (address only).
 */
export async function writeLayoutFile(
  dir: string,
  file: string,
  addrs: readonly NodePorts[],
  layout: { readonly owners: number; readonly partitions: number; readonly listed?: readonly number[] },
): Promise<string> {
  const path = join(dir, file)
  const nodes = addrs
    .filter((a) => layout.listed === undefined || layout.listed.includes(a.id))
    .map((a) => ({
      id: a.id,
      host: LOOPBACK,
      port: a.port,
      respPort: a.respPort,
      partitions: Array.from({ length: layout.partitions }, (_, p) => p).filter((p) => p % layout.owners === a.id),
    }))
  await writeFile(path, `${JSON.stringify({ name: 'grow', nodes }, null, 2)}\n`)
  return path
}

/** Builds version `v` of `store` for `cluster` (replication 2): key keyOf(i) has the value `v<v>:<key>`. */
export async function buildKeys(
  dir: string,
  cluster: Cluster,
  opts: {
    readonly store: string
    readonly version: number
    readonly keys: number
    readonly keyOf: (i: number) => string
    readonly chunks: number
  },
): Promise<string> {
  const v = opts.version
  return buildVersion({
    dir,
    cluster,
    store: opts.store,
    version: v,
    records: numberedRecords(opts.keys, (i) => `v${v}:${opts.keyOf(i)}`, opts.keyOf),
    output: join(dir, 'builds', `v${v}`),
    chunks: opts.chunks,
  })
}
