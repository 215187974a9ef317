import { copyFile, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { ClusterLayoutNode } from '../../cluster/layout'
import { METADATA_FILE } from '../../formats/store/layout/metadata'
import {
  MANIFEST_FILE,
  nodeView,
  partitionDataFileName,
  partitionIndexFileName,
  type PartitionEntry,
  type VersionManifest,
} from '../../formats/store/layout/partition-files'
import { writeLivePointer } from '../../swapper/disk/live-pointer'
import { versionDirName } from '../../swapper/disk/version-names'
import { writeRandomFile } from './fetch-fixture'

export interface PartitionOutputOptions {
  readonly store: string
  readonly version: number
  readonly nodes: number
  /** Partitions per node, dealt round-robin as testkit's writeClusterFile deals them. */
  readonly partitionsPerNode?: number
  readonly replication?: number
  readonly chunks?: number
  readonly dataBytes?: number
  readonly indexBytes?: number
}

/**
 * A format-2 build output for transport tests: `<root>/metadata.json` (the version
 * manifest) and every partition's `p<P>-c<C>.index|data` once, of random bytes with their
 * real checksums (a fetch checks checksums, it never looks inside).
 */
export async function makePartitionOutput(root: string, o: PartitionOutputOptions): Promise<VersionManifest> {
  const per = o.partitionsPerNode ?? 2
  const chunks = o.chunks ?? 1
  const layout: ClusterLayoutNode[] = Array.from({ length: o.nodes }, (_, id) => ({
    id,
    partitions: Array.from({ length: per }, (_, k) => k * o.nodes + id),
  }))
  await mkdir(root, { recursive: true })
  const partitionFiles: PartitionEntry[] = []
  for (let p = 0; p < o.nodes * per; p++) {
    const files = []
    for (let c = 0; c < chunks; c++) {
      for (const [name, size] of [
        [partitionIndexFileName(p, c), o.indexBytes ?? 20_000],
        [partitionDataFileName(p, c), o.dataBytes ?? 200_000],
      ] as const) {
        files.push({ name, size, checksum: await writeRandomFile(join(root, name), size) })
      }
    }
    partitionFiles.push({ partition: p, records: 0, chunkRecords: Array.from({ length: chunks }, () => 0), files })
  }
  const manifest: VersionManifest = {
    format: 'rostore',
    formatMajor: 2,
    formatMinor: 0,
    store: o.store,
    version: o.version,
    dataVersion: o.version,
    clusterName: 'test-cluster',
    layout,
    replication: o.replication ?? 2,
    partitions: o.nodes * per,
    keyHash: 'md5',
    keySerializer: 'string',
    valueSerializer: 'string',
    compression: 'none',
    chunks,
    records: 0,
    checksumAlgorithm: 'xxh64',
    partitionFiles,
    build: {},
  }
  await writeFile(join(root, METADATA_FILE), `${JSON.stringify(manifest, null, 2)}\n`)
  return manifest
}

/**
 * Places node `nodeId`'s copy of a format-2 version into a store directory of a data
 * directory, as a fetch would have left it (`metadata.json` = the node view,
 * `manifest.json`, the held files), before the node starts. With `live`, LIVE names it.
 */
export async function placeVersion(
  storeDir: string,
  manifest: VersionManifest,
  nodeId: number,
  fromRoot: string,
  opts: { readonly live?: boolean } = {},
): Promise<string> {
  const dir = join(storeDir, versionDirName(manifest.version))
  await mkdir(dir, { recursive: true })
  const view = nodeView(manifest, nodeId)
  for (const f of view.files) await copyFile(join(fromRoot, f.name), join(dir, f.name))
  await writeFile(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest)}\n`)
  await writeFile(join(dir, METADATA_FILE), `${JSON.stringify(view, null, 2)}\n`)
  if (opts.live === true) await writeLivePointer(storeDir, manifest.version)
  return dir
}
