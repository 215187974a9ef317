import { unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { RECORD_HEADER_SIZE } from '../formats/store/chunk/record'
import type { ChecksumAlgorithm } from '../formats/store/layout/metadata'
import type { KeyHasher } from '../formats/store/layout/key-hash'
import type { PatchEntry } from '../formats/store/layout/partition-files'
import { patchFileName } from '../formats/store/patch/patch-file'
import { PatchWriter } from '../formats/store/patch/patch-writer'
import { ChunkCursor } from '../formats/store/scan/chunk-cursor'

/**
 * One partition's patch against the same partition of the base build: a merge-join of the
 * two sides chunk by chunk in record order (hash, then key), by the hash prefixes in their
 * index entries. Keys are hashed only when two different keys share a prefix, and records
 * compared byte for byte only when their CRCs agree. Runs in a build worker, one
 * partition per task: memory is two read blocks per side and one patch block.
 */
export interface PartitionPatchTask {
  /** The base build's output directory, and this build's (both flat partition files). */
  readonly baseDir: string
  readonly dir: string
  readonly partition: number
  readonly chunks: number
  readonly baseDataVersion: number
  readonly dataVersion: number
  /** The largest patch kept, in bytes; a larger one is removed. */
  readonly limit: number
  /** The build's (and the base's) key hash: what orders two keys of one index prefix. */
  readonly keyHash: string
  readonly checksumAlgorithm: ChecksumAlgorithm
}

/** The patch written into `task.dir`, or undefined when it would exceed `task.limit`. */
export function writePartitionPatch(
  task: PartitionPatchTask,
  hasher: KeyHasher,
  checksum: (path: string) => string,
): PatchEntry | undefined {
  const name = patchFileName(task.partition)
  const file = join(task.dir, name)
  const writer = new PatchWriter(file, {
    partition: task.partition,
    chunks: task.chunks,
    baseDataVersion: task.baseDataVersion,
    dataVersion: task.dataVersion,
  })
  try {
    for (let chunk = 0; chunk < task.chunks; chunk++) {
      diffChunk(task.baseDir, task.dir, task.partition, chunk, writer, hasher)
      if (writer.size > task.limit) {
        writer.abandon()
        return undefined
      }
    }
  } catch (err) {
    writer.abandon()
    throw err
  }
  const done = writer.finish()
  if (done.size > task.limit) {
    unlinkSync(file)
    return undefined
  }
  return { name, size: done.size, ops: done.ops, checksum: checksum(file) }
}

/** The merge of one chunk's two sides: removed keys deleted, added and changed ones put. */
function diffChunk(baseDir: string, dir: string, partition: number, chunk: number, writer: PatchWriter, hasher: KeyHasher): void {
  const old = new ChunkCursor(baseDir, partition, chunk)
  let now: ChunkCursor | undefined
  try {
    now = new ChunkCursor(dir, partition, chunk)
    let a = old.next()
    let b = now.next()
    while (a || b) {
      const c = !a ? 1 : !b ? -1 : compareRecords(old, now, hasher)
      if (c < 0) {
        // The only base bytes a patch carries unchecked against the new build's: check them.
        old.checkCrc()
        writer.delete(old.key())
        a = old.next()
      } else if (c === 1) {
        writer.put(now.key(), now.value())
        b = now.next()
      } else {
        if (c === CHANGED) writer.put(now.key(), now.value())
        a = old.next()
        b = now.next()
      }
    }
  } finally {
    old.close()
    now?.close()
  }
}

/** compareRecords: the same key on both sides, with another value. */
const CHANGED = 2

/**
 * -1 or 1: the records' order (mapped-record.ts `compareWithinBucket`: full key hash, then
 * key bytes); 0: the same record; CHANGED: the same key, another value. Most records are
 * unchanged: one comparison of the whole record (header with lengths and CRC, key, value)
 * settles them. A CRC that differs proves the record differs without reading its bytes.
 */
function compareRecords(a: ChunkCursor, b: ChunkCursor, hasher: KeyHasher): number {
  if (a.prefixHi !== b.prefixHi) return a.prefixHi < b.prefixHi ? -1 : 1
  if (a.prefixLo !== b.prefixLo) return a.prefixLo < b.prefixLo ? -1 : 1
  const aStart = a.keyStart - RECORD_HEADER_SIZE
  const bStart = b.keyStart - RECORD_HEADER_SIZE
  if (
    a.crc === b.crc &&
    a.valueEnd - aStart === b.valueEnd - bStart &&
    a.data.compare(b.data, bStart, b.valueEnd, aStart, a.valueEnd) === 0
  )
    return 0
  const keys = a.data.compare(b.data, b.keyStart, b.keyEnd, a.keyStart, a.keyEnd)
  if (keys === 0) return CHANGED
  // Different keys with one prefix: the rest of their hashes orders them.
  return Buffer.compare(hasher.hash(a.key()), hasher.hash(b.key())) || keys
}
