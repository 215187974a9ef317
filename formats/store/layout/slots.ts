import { isChunkFileName } from './layout'
import type { StoreMetadata } from './metadata'
import { parsePartitionFileName } from './partition-files'

/**
 * Chunk slots of a node directory: its chunks in format 1, held partitions × chunks in
 * format 2 (partition-files.ts chunkSlot). Readers open one chunk per slot.
 */
export function slotCount(meta: StoreMetadata): number {
  return meta.held === undefined ? meta.chunks : meta.held.length * meta.chunks
}

/** A file a manifest may list, in either format: a chunk file, nothing else, never a path. */
export function isStoreFileName(name: string): boolean {
  return isChunkFileName(name) || parsePartitionFileName(name) !== undefined
}
