import {
  PARTITIONED_FORMAT_MAJOR,
  PARTITIONED_FORMAT_MINOR,
  partitionDataFileName,
  partitionIndexFileName,
  type PartitionEntry,
  type VersionManifest,
} from '../formats/store/layout/partition-files'
import type { ClusterLayoutNode } from '../cluster/layout'
import type { ChecksumAlgorithm } from '../formats/store/layout/metadata'
import { buildRecord, valueSerializer, type MetadataOptions } from './node-metadata'
import type { KindCounts, ReducedChunk } from './engines/local/worker-protocol'

/** What the manifest's file checksums are: known before the manifest is (build --base's patches are checksummed as they are written). */
export const MANIFEST_CHECKSUM_ALGORITHM: ChecksumAlgorithm = 'xxh64'

/**
 * A format-2 build's metadata.json (the version manifest) from every partition's reduced
 * chunks: shared by the local and Hadoop engines. `reduced` holds every (partition, chunk),
 * empty ones included.
 */
export function versionManifest(
  o: MetadataOptions,
  chunks: number,
  layout: readonly ClusterLayoutNode[],
  reduced: readonly ReducedChunk[],
  kinds: KindCounts,
): VersionManifest {
  const partitions = layout.reduce((s, n) => s + n.partitions.length, 0)
  const byPartition: ReducedChunk[][] = Array.from({ length: partitions }, () => [])
  for (const r of reduced) byPartition[r.partition as number]!.push(r)
  const partitionFiles = byPartition.map((mine, partition): PartitionEntry => {
    mine.sort((a, b) => a.chunk - b.chunk)
    return {
      partition,
      records: mine.reduce((s, r) => s + r.records, 0),
      chunkRecords: mine.map((r) => r.records),
      files: mine.flatMap((r) => [
        { name: partitionIndexFileName(partition, r.chunk), size: r.indexSize, checksum: r.indexChecksum },
        { name: partitionDataFileName(partition, r.chunk), size: r.dataSize, checksum: r.dataChecksum },
      ]),
    }
  })
  return {
    format: 'rostore',
    formatMajor: PARTITIONED_FORMAT_MAJOR,
    formatMinor: PARTITIONED_FORMAT_MINOR,
    store: o.store,
    version: o.version,
    dataVersion: o.version,
    clusterName: o.clusterName,
    layout,
    replication: o.replication,
    partitions,
    keyHash: o.keyHash,
    keySerializer: kinds.keys.bytes > 0 ? 'bytes' : 'string',
    valueSerializer: valueSerializer(kinds),
    compression: o.compression,
    ...(o.dictionaryFile ? { dictionary: o.dictionaryFile } : {}),
    chunks,
    records: partitionFiles.reduce((s, p) => s + p.records, 0),
    checksumAlgorithm: MANIFEST_CHECKSUM_ALGORITHM,
    partitionFiles,
    build: { ...buildRecord(o, chunks), layout: 'partitions' },
  }
}
