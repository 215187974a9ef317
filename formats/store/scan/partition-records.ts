import { closeSync, fstatSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { HEADER_SIZE } from '../chunk/header'
import type { KeyHasher } from '../layout/key-hash'
import { partitionDataFileName } from '../layout/partition-files'
import { walkRecords } from './record-walk'

/**
 * The records of one chunk of a format-2 partition with their full key hash, in file order,
 * which is the builder's order (mapped-record.ts `compareWithinBucket`): hash, then key.
 * Patches are written and applied in this order (patch-file.ts).
 */
export interface HashedRecord {
  readonly hash: Uint8Array
  /** Views valid until the next record is pulled. */
  readonly key: Buffer
  readonly value: Buffer
}

export function* walkPartitionChunk(
  dir: string,
  partition: number,
  chunk: number,
  hasher: KeyHasher,
  dropBehind = false,
): Generator<HashedRecord> {
  const file = join(dir, partitionDataFileName(partition, chunk))
  const fd = openSync(file, 'r')
  try {
    const size = fstatSync(fd).size
    for (const r of walkRecords(fd, HEADER_SIZE, size, file, dropBehind)) yield { hash: hasher.hash(r.key), key: r.key, value: r.value }
  } finally {
    closeSync(fd)
  }
}

/** The builder's record order inside a chunk: key hash, then key bytes. */
export function compareRecordOrder(hashA: Uint8Array, keyA: Uint8Array, hashB: Uint8Array, keyB: Uint8Array): number {
  return Buffer.compare(hashA, hashB) || Buffer.compare(keyA, keyB)
}
