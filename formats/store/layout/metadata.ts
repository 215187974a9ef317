import type { ClusterLayoutNode } from '../../../cluster/layout'
import type { KeyKind } from '../../input/types'

/**
 * The per-node metadata file (`metadata.json`) of one store version. It is also the
 * fetcher's manifest: every other file of the node directory is listed in `files` with
 * its size and checksum. Specified field by field in docs/FORMAT.md.
 */
export const METADATA_FILE = 'metadata.json'
/** metadata.json's major for format 1 (one directory per node); format 2's is
 *  partition-files.ts PARTITIONED_FORMAT_MAJOR. Chunk files have their own (header.ts). */
export const FORMAT_MAJOR = 1
export const FORMAT_MINOR = 0

export const COMPRESSIONS = ['none', 'gzip', 'snappy', 'zstd'] as const
export type Compression = (typeof COMPRESSIONS)[number]

export const CHECKSUM_ALGORITHMS = ['xxh64'] as const
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number]

/** `string`: UTF-8 text; `json`: JSON text; `mixed`: UTF-8 text where the input held a
 *  string, JSON text where it held anything else (JSON lines with mixed value types). */
export type ValueSerializer = 'string' | 'json' | 'bytes' | 'mixed'
export type KeySerializer = KeyKind

export interface FileEntry {
  /** Plain file name inside the node directory: no slashes, no "..". */
  readonly name: string
  readonly size: number
  /** Lower-case hex digest with `checksumAlgorithm`. */
  readonly checksum: string
}

export interface StoreMetadata {
  readonly format: 'rostore'
  /** 1: one directory per node (`<chunk>.index`); 2: partition files (formats/store/layout/partition-files.ts). */
  readonly formatMajor: number
  readonly formatMinor: number
  readonly store: string
  /** Positive integer; larger is newer. */
  readonly version: number
  /** Format 2: the version of the build that wrote the partition files (file ids use it). */
  readonly dataVersion?: number
  readonly nodeId: number
  /**
   * Format 2: the partitions this directory holds, ascending; chunk slot `s × chunks + c`
   * is chunk `c` of partition `held[s]`, and `files` and `chunkRecords` follow slot order.
   * Absent in format 1, where `chunks` are the node's and slot = chunk.
   */
  readonly held?: readonly number[]
  readonly clusterName: string
  /** Node ids and partitions only: hosts and ports may change without a rebuild. */
  readonly layout: readonly ClusterLayoutNode[]
  readonly replication: number
  readonly keyHash: string
  readonly keySerializer: KeySerializer
  readonly valueSerializer: ValueSerializer
  readonly compression: Compression
  /** zstd: the version's dictionary file (dictionary-file.ts); absent: plain zstd or another codec. */
  readonly dictionary?: FileEntry
  /** Format 1: chunks of the node; format 2: chunks per partition. */
  readonly chunks: number
  readonly records: number
  readonly chunkRecords: readonly number[]
  readonly checksumAlgorithm: ChecksumAlgorithm
  readonly files: readonly FileEntry[]
  /** The options that shaped the output (not workers, memory or paths). */
  readonly build: Readonly<Record<string, string | number | boolean | null>>
}
