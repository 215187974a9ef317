import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../../common/errors'
import { checksumFile } from '../chunk/checksum'
import { ChunkWriter } from '../chunk/chunk-writer'
import { codecByName } from '../chunk/codec'
import { createKeyHasher } from '../layout/key-hash'
import type { FileEntry } from '../layout/metadata'
import { PATCH_DELETE } from './patch-file'
import { openPatch, type PatchOp } from './patch-read'
import type { VersionManifest } from '../layout/partition-files'
import { compareRecordOrder, walkPartitionChunk, type HashedRecord } from '../scan/partition-records'
import { chunkOf } from '../layout/layout'
import { INDEX_ENTRY_SIZE } from '../chunk/header'
import { RECORD_HEADER_SIZE } from '../chunk/record'

/**
 * Rebuilds partition `partition` of `manifest`'s version from the same partition of its
 * base and the partition's patch: a merge of the base's records (in file order) with the
 * patch's operations (in the same order), written by the builder's ChunkWriter, so the
 * files come out byte for byte as the build wrote them. Memory: one base read block, one
 * inflated patch block, the writer's buffers.
 *
 * The files are then checksummed and compared with the manifest: a mismatch, a bad patch
 * or a base that is not the manifest's throws, and the files written are removed (the
 * caller fetches the full files instead).
 */
export interface ApplyPatchOptions {
  /** Directory holding the base version's files of the partition (p<P>-c<C>.*). */
  readonly baseDir: string
  readonly patchFile: string
  /** Where the partition's new chunk files are written (a staging directory). */
  readonly outDir: string
  /** The new version's manifest (names the base, lists the partition's expected files). */
  readonly manifest: VersionManifest
  readonly partition: number
  /** The base is not served: its pages may leave the page cache once read. Default false. */
  readonly dropBehind?: boolean
  /** Awaited about every PACE_BYTES of records written: a node's throttle takes its tokens here. */
  readonly pace?: (bytes: number) => Promise<void>
  readonly signal?: AbortSignal
}

const PACE_BYTES = 1 << 20

export interface AppliedPatch {
  readonly files: readonly FileEntry[]
  readonly ops: number
  /** Bytes read from the base and written, for the node's accounting. */
  readonly bytesWritten: number
}

export async function applyPatch(o: ApplyPatchOptions): Promise<AppliedPatch> {
  const m = o.manifest
  const entry = m.partitionFiles[o.partition]
  if (entry === undefined) throw new RangeError(`partition ${o.partition} is not in the manifest`)
  const name = `patch of partition ${o.partition}`
  const { header, ops } = await openPatch(o.patchFile, name)
  const written: string[] = []
  try {
    if (m.base === undefined) throw new StoreError('RO_BAD_OPTION', `version ${m.version} names no base to apply ${name} to`)
    if (
      header.partition !== o.partition ||
      header.chunks !== m.chunks ||
      header.dataVersion !== m.dataVersion ||
      header.baseDataVersion !== m.base.dataVersion
    )
      throw new StoreError('RO_CORRUPT', `${name}: made for another partition or version`)
    const hasher = await createKeyHasher(m.keyHash)
    const codecId = codecByName(m.compression).id
    const next = async (): Promise<(PatchOp & { hash: Uint8Array; chunk: number }) | undefined> => {
      const r = await ops.next()
      if (r.done) return undefined
      const hash = hasher.hash(r.value.key)
      return { ...r.value, hash, chunk: chunkOf(hash, m.chunks) }
    }
    let op = await next()
    let count = 0
    let unpaced = 0
    const written1 = async (key: Uint8Array, value: Uint8Array): Promise<void> => {
      unpaced += RECORD_HEADER_SIZE + INDEX_ENTRY_SIZE + key.length + value.length
      if (unpaced < PACE_BYTES || o.pace === undefined) return
      const n = unpaced
      unpaced = 0
      await o.pace(n)
      o.signal?.throwIfAborted()
    }
    for (let chunk = 0; chunk < m.chunks; chunk++) {
      o.signal?.throwIfAborted()
      const writer = new ChunkWriter(o.outDir, { store: m.store, dataVersion: m.dataVersion, partition: o.partition, chunk }, codecId)
      for (const f of entry.files.slice(2 * chunk, 2 * chunk + 2)) written.push(join(o.outDir, f.name))
      const base = walkPartitionChunk(o.baseDir, o.partition, chunk, hasher, o.dropBehind === true)
      try {
        let b: HashedRecord | undefined = pull(base)
        for (;;) {
          if (op !== undefined && op.chunk < chunk) throw new StoreError('RO_CORRUPT', `${name}: operations out of order`)
          const here = op !== undefined && op.chunk === chunk ? op : undefined
          if (here === undefined && b === undefined) break
          const c = here === undefined ? 1 : b === undefined ? -1 : compareRecordOrder(here.hash, here.key, b.hash, b.key)
          if (c > 0) {
            const rec = b as HashedRecord
            writer.add(rec.hash, rec.key, rec.value)
            await written1(rec.key, rec.value)
            b = pull(base)
            continue
          }
          const cur = here as NonNullable<typeof here>
          if (cur.op === PATCH_DELETE && c !== 0) throw new StoreError('RO_CORRUPT', `${name}: deletes a key the base does not hold`)
          if (cur.op !== PATCH_DELETE) {
            writer.add(cur.hash, cur.key, cur.value ?? Buffer.alloc(0))
            await written1(cur.key, cur.value ?? Buffer.alloc(0))
          }
          if (c === 0) b = pull(base)
          count++
          op = await next()
          if (op !== undefined && op.chunk === chunk && compareRecordOrder(op.hash, op.key, cur.hash, cur.key) <= 0)
            throw new StoreError('RO_CORRUPT', `${name}: operations out of order`)
        }
      } catch (err) {
        base.return(undefined)
        writer.close()
        throw err
      }
      writer.finish()
    }
    if (op !== undefined) throw new StoreError('RO_CORRUPT', `${name}: operations out of order`)
    // Pulls the rest of the body: its checksums are checked at its end.
    if (!(await ops.next()).done) throw new StoreError('RO_CORRUPT', `${name}: operations out of order`)
    await o.pace?.(unpaced)
    return { files: await checkFiles(o.outDir, entry.files, m.checksumAlgorithm), ops: count, bytesWritten: sumSizes(entry.files) }
  } catch (err) {
    await ops.return(undefined)
    await Promise.all(written.map((f) => rm(f, { force: true })))
    throw err
  }
}

function pull(it: Generator<HashedRecord>): HashedRecord | undefined {
  const r = it.next()
  return r.done ? undefined : r.value
}

function sumSizes(files: readonly FileEntry[]): number {
  return files.reduce((s, f) => s + f.size, 0)
}

/**
 * The rebuilt files must be the build's, byte for byte: same size, same checksum. Read with
 * drop-behind: the new files leave the page cache as a fetched file's do (the live
 * version's hot pages stay).
 */
async function checkFiles(
  dir: string,
  expected: readonly FileEntry[],
  algorithm: VersionManifest['checksumAlgorithm'],
): Promise<FileEntry[]> {
  for (const f of expected) {
    const got = await checksumFile(join(dir, f.name), algorithm, { dropBehind: true })
    if (got !== f.checksum)
      throw new StoreError('RO_CHECKSUM_MISMATCH', `rebuilt ${f.name} has checksum ${got}, the build's is ${f.checksum}`)
  }
  return [...expected]
}
