/** File and directory names of build output and node data directories, and the chunk rule. */
import { readU32BE } from '../../../common/bytes'

export const INDEX_SUFFIX = '.index'
export const DATA_SUFFIX = '.data'

export function nodeDirName(nodeId: number): string {
  return `node-${nodeId}`
}

export function indexFileName(chunk: number): string {
  return `${chunk}${INDEX_SUFFIX}`
}

export function dataFileName(chunk: number): string {
  return `${chunk}${DATA_SUFFIX}`
}

/** Store and version-directory names from users and requests: one path segment, bounded. */
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

export function isSafeName(name: string): boolean {
  return SAFE_NAME.test(name) && !name.includes('..')
}

/** A file name a manifest may list: a chunk file, nothing else, never a path. */
export function isChunkFileName(name: string): boolean {
  return /^(0|[1-9][0-9]{0,8})\.(index|data)$/.test(name)
}

/**
 * The chunk of a key on every replica node: bytes 4-7 of its hash. Not bytes 0-3, which
 * pick the partition (cluster/routing.ts): with the same bits, a node owning partitions
 * {0, 3} of 4 would only ever see some chunk residues.
 */
export function chunkOf(hash: Uint8Array, chunks: number): number {
  return readU32BE(hash, 4) % chunks
}
