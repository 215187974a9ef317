import { copyFile, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { ClusterLayoutNode } from '../../cluster/layout'
import { buildRing, masterPartition } from '../../cluster/routing'
import { checksumFile } from '../../formats/store/chunk/checksum'
import { ChunkWriter } from '../../formats/store/chunk/chunk-writer'
import { createCodec } from '../../formats/store/chunk/codec'
import { createKeyHasher } from '../../formats/store/layout/key-hash'
import { chunkOf } from '../../formats/store/layout/layout'
import { METADATA_FILE, type Compression, type FileEntry, type StoreMetadata } from '../../formats/store/layout/metadata'
import { writeMetadata } from '../../formats/store/layout/metadata-io'
import {
  MANIFEST_FILE,
  PARTITIONED_FORMAT_MAJOR,
  PARTITIONED_FORMAT_MINOR,
  nodeView,
  partitionDataFileName,
  partitionIndexFileName,
  type PartitionEntry,
  type VersionManifest,
} from '../../formats/store/layout/partition-files'

export interface MakePartitionedOptions {
  readonly store?: string
  readonly version?: number
  /** The build that wrote the files (default: version). */
  readonly dataVersion?: number
  /** Default: 3 nodes, 6 partitions, node i masters i and i + 3. */
  readonly layout?: readonly ClusterLayoutNode[]
  /** Default 2: every node holds 4 of the 6 default partitions. */
  readonly replication?: number
  /** Chunks per partition (default 2). */
  readonly chunks?: number
  readonly compression?: Compression
  readonly keyHash?: string
}

export const DEFAULT_PARTITIONED_LAYOUT: readonly ClusterLayoutNode[] = [
  { id: 0, partitions: [0, 3] },
  { id: 1, partitions: [1, 4] },
  { id: 2, partitions: [2, 5] },
]

/**
 * Writes a format-2 build output straight from key/value pairs, without the builder:
 * every partition's chunk files (`p<P>-c<C>.index|data`, partition identity) and the
 * version manifest as its metadata.json. For tests of the readers and tools.
 */
export async function makeBuildOutput(
  dir: string,
  records: Iterable<[string | Buffer, string | Buffer]>,
  opts: MakePartitionedOptions = {},
): Promise<VersionManifest> {
  const store = opts.store ?? 'test'
  const version = opts.version ?? 1
  const dataVersion = opts.dataVersion ?? version
  const layout = opts.layout ?? DEFAULT_PARTITIONED_LAYOUT
  const chunks = opts.chunks ?? 2
  const compression = opts.compression ?? 'none'
  const codec = createCodec(compression, { forEncode: true })
  const hasher = await createKeyHasher(opts.keyHash ?? 'md5')
  const P = buildRing(layout).partitionCount
  const lists = Array.from({ length: P * chunks }, () => [] as { hash: Buffer; key: Buffer; value: Buffer }[])
  for (const [k, v] of records) {
    const key = Buffer.from(k)
    const hash = Buffer.from(hasher.hash(key))
    lists[masterPartition(hash, P) * chunks + chunkOf(hash, chunks)]!.push({ hash, key, value: codec.encode(Buffer.from(v)) })
  }
  await mkdir(dir, { recursive: true })
  const partitionFiles: PartitionEntry[] = []
  for (let p = 0; p < P; p++) {
    const files: FileEntry[] = []
    const chunkRecords: number[] = []
    for (let c = 0; c < chunks; c++) {
      const list = lists[p * chunks + c]!.sort((a, b) => Buffer.compare(a.hash, b.hash) || Buffer.compare(a.key, b.key))
      const w = new ChunkWriter(dir, { store, dataVersion, partition: p, chunk: c }, codec.id)
      for (const r of list) w.add(r.hash, r.key, r.value)
      const s = w.finish()
      chunkRecords.push(s.records)
      const index = partitionIndexFileName(p, c)
      const data = partitionDataFileName(p, c)
      files.push({ name: index, size: s.indexSize, checksum: await checksumFile(join(dir, index)) })
      files.push({ name: data, size: s.dataSize, checksum: await checksumFile(join(dir, data)) })
    }
    partitionFiles.push({ partition: p, records: chunkRecords.reduce((a, b) => a + b, 0), chunkRecords, files })
  }
  const manifest: VersionManifest = {
    format: 'rostore',
    formatMajor: PARTITIONED_FORMAT_MAJOR,
    formatMinor: PARTITIONED_FORMAT_MINOR,
    store,
    version,
    dataVersion,
    clusterName: 'test',
    layout,
    replication: opts.replication ?? 2,
    partitions: P,
    keyHash: hasher.name,
    keySerializer: 'string',
    valueSerializer: 'string',
    compression,
    chunks,
    records: partitionFiles.reduce((n, e) => n + e.records, 0),
    checksumAlgorithm: 'xxh64',
    partitionFiles,
    build: { source: 'testkit/make-partitioned' },
  }
  await writeJson(join(dir, METADATA_FILE), manifest)
  return manifest
}

/**
 * Installs node `nodeId`'s format-2 version directory from a build output: its held
 * partitions' files, the whole manifest as manifest.json, its node view as metadata.json.
 */
export async function makePartitionedNodeDir(
  buildDir: string,
  manifest: VersionManifest,
  nodeId: number,
  dir: string,
): Promise<StoreMetadata> {
  const meta = nodeView(manifest, nodeId)
  await mkdir(dir, { recursive: true })
  for (const f of meta.files) await copyFile(join(buildDir, f.name), join(dir, f.name))
  await writeJson(join(dir, MANIFEST_FILE), manifest)
  await writeMetadata(dir, meta)
  return meta
}

async function writeJson(file: string, value: unknown): Promise<void> {
  await writeFile(file, JSON.stringify(value, null, 2) + '\n')
}
