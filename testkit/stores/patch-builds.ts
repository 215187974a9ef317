import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { buildStore } from '../../builder/engines/local/build-job'
import { writePartitionPatches } from '../../builder/partition-patches'
import { parseCluster, type Cluster } from '../../cluster/cluster'
import { readManifest } from '../../formats/store/layout/manifest-io'
import type { VersionManifest } from '../../formats/store/layout/partition-files'
import { writeInput } from './input-files'

/**
 * Real builds of one record set after another, for the delta tests (patches written, read,
 * rebuilt and fetched): format 2 over a small cluster whose partitions are spread round
 * robin, each version built from a TSV file of its records.
 */
export type Records = Map<string, string>

export interface PatchCluster {
  readonly nodes: number
  readonly partitions: number
  readonly replication: number
  /** The first node's port (never listened on: the builds only name it). */
  readonly port: number
}

export const PATCH_CLUSTER: PatchCluster = { nodes: 3, partitions: 12, replication: 2, port: 7100 }

export interface PatchBuildOptions {
  readonly base?: string
  readonly compression?: 'none' | 'gzip'
  readonly patchOnly?: boolean
  readonly keyHash?: string
  /** Chunks per partition without a base (with one, the build takes the base's unless given). */
  readonly chunks?: number
  readonly workers?: number
  readonly output?: string
  readonly signal?: AbortSignal
  readonly onProgress?: (p: { phase: string; bucketsDone: number; bucketsTotal: number }) => void
}

export interface PatchBuilds {
  readonly cluster: Cluster
  /** A path under the directory no other call returned. */
  path(name: string): string
  /** Builds `recs` as `version` of store 'st'; the output directory. */
  build(recs: Records, version: number, o?: PatchBuildOptions): Promise<string>
}

/** Builds under `dir`; `defaults` fill what a build's options leave out. */
export function patchBuilds(
  dir: string,
  shape: PatchCluster = PATCH_CLUSTER,
  defaults: Pick<PatchBuildOptions, 'chunks' | 'workers' | 'compression'> = {},
): PatchBuilds {
  let seq = 0
  const path = (name: string): string => join(dir, `${seq++}-${name}`)
  const cluster = parseCluster({
    name: 'test',
    nodes: Array.from({ length: shape.nodes }, (_, id) => ({
      id,
      host: '127.0.0.1',
      port: shape.port + id,
      partitions: Array.from({ length: shape.partitions }, (_, p) => p).filter((p) => p % shape.nodes === id),
    })),
  })
  const build = async (recs: Records, version: number, o: PatchBuildOptions = {}): Promise<string> => {
    const file = path('in.tsv')
    await writeInput(file, 'tsv', [...recs])
    const output = o.output ?? path(`v${version}`)
    const chunks = o.chunks ?? (o.base === undefined ? (defaults.chunks ?? 3) : undefined)
    await buildStore({
      inputs: [file],
      format: 'tsv',
      cluster,
      store: 'st',
      output,
      version,
      replication: shape.replication,
      layout: 'partitions',
      workers: o.workers ?? defaults.workers ?? 2,
      compression: o.compression ?? defaults.compression ?? 'none',
      ...(o.keyHash !== undefined ? { keyHash: o.keyHash } : {}),
      ...(o.signal !== undefined ? { signal: o.signal } : {}),
      ...(o.onProgress !== undefined ? { onProgress: o.onProgress } : {}),
      ...(o.base !== undefined ? { base: o.base } : {}),
      ...(o.patchOnly === true ? { patchOnly: true } : {}),
      ...(chunks !== undefined ? { chunks } : {}),
    })
    return output
  }
  return { cluster, path, build }
}

/** Values that do not compress much, as real ones: a patch of every value is as large as the files. */
export function incompressibleRecords(n: number): Records {
  return new Map(Array.from({ length: n }, (_, i) => [`key-${i}`, randomBytes(30 + (i % 150)).toString('base64')]))
}

/** Patches of every partition of `next` against `base` (none dropped as too large). */
export async function patchAll(base: string, next: string): Promise<VersionManifest> {
  return writePartitionPatches({ dir: base, manifest: await readManifest(base) }, next, await readManifest(next), Infinity)
}
