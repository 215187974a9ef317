import { dataFileName, indexFileName } from '../formats/store/layout/layout'
import {
  FORMAT_MAJOR,
  FORMAT_MINOR,
  type Compression,
  type FileEntry,
  type StoreMetadata,
  type ValueSerializer,
} from '../formats/store/layout/metadata'
import type { KindCounts, ReducedChunk } from './engines/local/worker-protocol'
import type { DictionarySource } from './dictionary-training'

export interface MetadataOptions {
  readonly store: string
  readonly version: number
  readonly clusterName: string
  readonly replication: number
  readonly keyHash: string
  readonly compression: Compression
  /** zstd: the level values were compressed at. */
  readonly zstdLevel?: number
  /** zstd: the dictionary file written beside the metadata, when the build has one. */
  readonly dictionaryFile?: FileEntry
  /** zstd: where that dictionary came from (default 'trained'). */
  readonly dictionarySource?: DictionarySource
  /** zstd: value bytes before and after compression, over the input (replicas counted once). */
  readonly valueBytes?: { readonly raw: number; readonly stored: number }
  readonly format: string
  readonly keyField?: string
  readonly valueField?: string
  readonly onDuplicate: string
}

/** A node's metadata.json from its reduced chunks: shared by the local and Hadoop engines. */
export function nodeMetadata(
  o: MetadataOptions,
  chunks: number,
  nodeId: number,
  layout: StoreMetadata['layout'],
  mine: readonly ReducedChunk[],
  kinds: KindCounts,
): StoreMetadata {
  const files = mine.flatMap((r) => [
    { name: indexFileName(r.chunk), size: r.indexSize, checksum: r.indexChecksum },
    { name: dataFileName(r.chunk), size: r.dataSize, checksum: r.dataChecksum },
  ])
  return {
    format: 'rostore',
    formatMajor: FORMAT_MAJOR,
    formatMinor: FORMAT_MINOR,
    store: o.store,
    version: o.version,
    nodeId,
    clusterName: o.clusterName,
    layout,
    replication: o.replication,
    keyHash: o.keyHash,
    keySerializer: kinds.keys.bytes > 0 ? 'bytes' : 'string',
    valueSerializer: valueSerializer(kinds),
    compression: o.compression,
    ...(o.dictionaryFile ? { dictionary: o.dictionaryFile } : {}),
    chunks,
    records: mine.reduce((s, r) => s + r.records, 0),
    chunkRecords: mine.map((r) => r.records),
    checksumAlgorithm: 'xxh64',
    files,
    build: buildRecord(o, chunks),
  }
}

/** The options that shaped the output, as metadata records them (format 1 field order). */
export function buildRecord(o: MetadataOptions, chunks: number): Record<string, string | number | null> {
  return {
    format: o.format,
    keyField: o.keyField ?? null,
    valueField: o.valueField ?? null,
    onDuplicate: o.onDuplicate,
    chunks,
    replication: o.replication,
    compression: o.compression,
    // Only zstd builds carry these, so the records of the other codecs stay as they were.
    ...(o.compression === 'zstd'
      ? {
          zstdLevel: o.zstdLevel ?? null,
          zstdDictionary: o.dictionaryFile ? (o.dictionarySource ?? 'trained') : 'none',
          valueBytes: o.valueBytes?.raw ?? null,
          storedValueBytes: o.valueBytes?.stored ?? null,
        }
      : {}),
  }
}

export function valueSerializer(k: KindCounts): ValueSerializer {
  const { string, json, bytes } = k.values
  const used = [string, json, bytes].filter((n) => n > 0).length
  if (used > 1) return bytes > 0 ? 'bytes' : 'mixed'
  if (json > 0) return 'json'
  if (bytes > 0) return 'bytes'
  return 'string'
}
