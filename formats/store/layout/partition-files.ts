import { createHash } from 'node:crypto'
import { readU32BE } from '../../../common/bytes'
import { buildRing, heldPartitions, masterPartition } from '../../../cluster/routing'
import type { ChecksumAlgorithm, Compression, FileEntry, KeySerializer, StoreMetadata, ValueSerializer } from './metadata'
import type { ClusterLayoutNode } from '../../../cluster/layout'

/**
 * Format 2: a build writes each partition's chunks once, named by partition and chunk,
 * with bytes that depend only on the store, the data version, the partition and its
 * records: never on which nodes hold it, nor on the replication or the node count. A node
 * holds the partitions its layout gives it, and two replicas of a partition hold the same
 * bytes, so a node can take a partition from a peer (docs/FORMAT.md, "Format 2").
 *
 * The chunk files themselves (header, index, data) are format 1's, byte for byte; only
 * their names and the file id's inputs differ.
 */
export const PARTITIONED_FORMAT_MAJOR = 2
export const PARTITIONED_FORMAT_MINOR = 0
/** A node's copy of the whole version manifest (every partition's files), beside its metadata.json. */
export const MANIFEST_FILE = 'manifest.json'

export function partitionIndexFileName(partition: number, chunk: number): string {
  return `p${partition}-c${chunk}.index`
}

export function partitionDataFileName(partition: number, chunk: number): string {
  return `p${partition}-c${chunk}.data`
}

const PARTITION_FILE = /^p(0|[1-9][0-9]{0,8})-c(0|[1-9][0-9]{0,8})\.(index|data)$/

/** The partition, chunk and kind a format-2 file name stands for, or undefined for any other name. */
export function parsePartitionFileName(
  name: string,
): { readonly partition: number; readonly chunk: number; readonly kind: 'index' | 'data' } | undefined {
  const m = PARTITION_FILE.exec(name)
  if (!m) return undefined
  return { partition: Number(m[1]), chunk: Number(m[2]), kind: m[3] as 'index' | 'data' }
}

/**
 * The 16-byte id both files of a format-2 chunk carry: MD5("<store>\n<dataVersion>\npartition-<p>\n<chunk>").
 * `dataVersion` is the version of the build that wrote the partition (a rebalance makes
 * a new version out of an older build's files, unchanged).
 */
export function partitionChunkFileId(store: string, dataVersion: number, partition: number, chunk: number): Buffer {
  return createHash('md5').update(`${store}\n${dataVersion}\npartition-${partition}\n${chunk}`).digest()
}

/** One partition of a version: its records and its chunk files (index and data per chunk, chunk order). */
export interface PartitionEntry {
  readonly partition: number
  readonly records: number
  readonly chunkRecords: readonly number[]
  readonly files: readonly FileEntry[]
  /** The partition's patch against the manifest's `base` (patch-file.ts); absent: fetch the files. */
  readonly patch?: PatchEntry
}

/** A partition patch file of a build output, beside the full files. */
export interface PatchEntry {
  /** `p<P>.patch`. */
  readonly name: string
  readonly size: number
  readonly checksum: string
  /** Operations in the patch (records put or deleted). */
  readonly ops: number
}

/** The earlier version a build's patches apply to. */
export interface BaseVersion {
  readonly version: number
  /** The base's dataVersion: what its partition files were written as, and what a node must hold. */
  readonly dataVersion: number
}

/**
 * The build output's `metadata.json` in format 2, and a node's `manifest.json`: the whole
 * version, every partition once. The fetch manifest of every node of the version.
 */
export interface VersionManifest {
  readonly format: 'rostore'
  readonly formatMajor: 2
  readonly formatMinor: number
  readonly store: string
  readonly version: number
  /** The version of the build that wrote the partition files (= version for a build). */
  readonly dataVersion: number
  readonly clusterName: string
  readonly layout: readonly ClusterLayoutNode[]
  readonly replication: number
  /** Partition count P of the ring (= the layout's partitions). */
  readonly partitions: number
  readonly keyHash: string
  readonly keySerializer: KeySerializer
  readonly valueSerializer: ValueSerializer
  readonly compression: Compression
  /** zstd: the version's dictionary file, which every node directory holds a copy of. */
  readonly dictionary?: FileEntry
  /** Chunks per partition, the same for every partition. */
  readonly chunks: number
  /** Records of the version, each counted once. */
  readonly records: number
  readonly checksumAlgorithm: ChecksumAlgorithm
  /** Every partition 0..P-1, ascending. */
  readonly partitionFiles: readonly PartitionEntry[]
  /** Set by a build with --base: partitions listing a `patch` can be made from this version's. */
  readonly base?: BaseVersion
  readonly build: Readonly<Record<string, string | number | boolean | null>>
}

/**
 * A node's `metadata.json` for a format-2 version: the manifest narrowed to the partitions
 * the node holds under the version's layout. Its `files`, `chunkRecords` and `records` are
 * those of the held partitions, in slot order: chunk slot `s × chunks + c` is chunk `c` of
 * partition `held[s]`.
 */
export function nodeView(manifest: VersionManifest, nodeId: number): StoreMetadata {
  const held = heldPartitions(buildRing(manifest.layout), manifest.replication, nodeId)
  const entries = held.map((p) => manifest.partitionFiles[p] as PartitionEntry)
  const chunkRecords = entries.flatMap((e) => e.chunkRecords)
  return {
    format: 'rostore',
    formatMajor: PARTITIONED_FORMAT_MAJOR,
    formatMinor: manifest.formatMinor,
    store: manifest.store,
    version: manifest.version,
    dataVersion: manifest.dataVersion,
    nodeId,
    held,
    clusterName: manifest.clusterName,
    layout: manifest.layout,
    replication: manifest.replication,
    keyHash: manifest.keyHash,
    keySerializer: manifest.keySerializer,
    valueSerializer: manifest.valueSerializer,
    compression: manifest.compression,
    ...(manifest.dictionary ? { dictionary: manifest.dictionary } : {}),
    chunks: manifest.chunks,
    records: chunkRecords.reduce((a, b) => a + b, 0),
    chunkRecords,
    checksumAlgorithm: manifest.checksumAlgorithm,
    files: entries.flatMap((e) => e.files),
    build: manifest.build,
  }
}

/**
 * Where a key's record lives in a node directory, as an index into the directory's chunk
 * list (slot order), or -1 when the directory does not hold the key's partition.
 * Format 1: `u32be(h[4..8]) mod chunks`. Format 2: slot of the key's master partition
 * among `held`, times chunks, plus the same chunk rule.
 */
export interface ChunkGeometry {
  /** Chunks per partition (format 2) or per node (format 1). */
  readonly chunks: number
  /** Format 2: P, and slot of each partition (-1: not held). Format 1: undefined. */
  readonly partitionCount?: number
  readonly slots?: Int32Array
}

export function chunkGeometry(meta: StoreMetadata): ChunkGeometry {
  if (meta.held === undefined) return { chunks: meta.chunks }
  const partitionCount = buildRing(meta.layout).partitionCount
  const slots = new Int32Array(partitionCount).fill(-1)
  meta.held.forEach((p, s) => (slots[p] = s))
  return { chunks: meta.chunks, partitionCount, slots }
}

export function chunkSlot(hash: Uint8Array, g: ChunkGeometry): number {
  const chunk = readU32BE(hash, 4) % g.chunks
  if (g.slots === undefined) return chunk
  const slot = g.slots[masterPartition(hash, g.partitionCount as number)] as number
  return slot < 0 ? -1 : slot * g.chunks + chunk
}

/** The file names of chunk slot `slot` of a node directory, in either format. */
export function slotFileNames(meta: StoreMetadata, slot: number): { readonly index: string; readonly data: string } {
  if (meta.held === undefined) return { index: `${slot}.index`, data: `${slot}.data` }
  const partition = meta.held[Math.floor(slot / meta.chunks)] as number
  const chunk = slot % meta.chunks
  return { index: partitionIndexFileName(partition, chunk), data: partitionDataFileName(partition, chunk) }
}

/** The file id chunk slot `slot` of a node directory must carry, in either format. */
export function slotFileId(meta: StoreMetadata, slot: number): Buffer {
  if (meta.held === undefined) {
    return createHash('md5').update(`${meta.store}\n${meta.version}\n${meta.nodeId}\n${slot}`).digest()
  }
  const partition = meta.held[Math.floor(slot / meta.chunks)] as number
  return partitionChunkFileId(meta.store, meta.dataVersion ?? meta.version, partition, slot % meta.chunks)
}

/** The chunk number written in (and expected from) the header of slot `slot`'s files. */
export function slotHeaderChunk(meta: StoreMetadata, slot: number): number {
  return meta.held === undefined ? slot : slot % meta.chunks
}
