import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { createXXHash64 } from 'hash-wasm'
import { StoreError } from '../../../common/errors'
import { masterPartition } from '../../../cluster/routing'
import type { ValueCodec } from '../chunk/codec'
import { versionCodec } from '../chunk/dictionary-file'
import { HEADER_SIZE, INDEX_ENTRY_SIZE, encodeDataHeader, encodeIndexHeader } from '../chunk/header'
import { createKeyHasher } from '../layout/key-hash'
import { chunkOf } from '../layout/layout'
import type { FileEntry } from '../layout/metadata'
import { partitionChunkFileId, partitionDataFileName, partitionIndexFileName, type VersionManifest } from '../layout/partition-files'
import { compareRecordOrder } from '../scan/partition-records'
import { ChunkMerge, type HashedOp } from './chunk-merge'
import { HashedOutput } from './hashed-output'
import { KeepResident } from './keep-resident'
import { PATCH_DELETE } from './patch-file'
import { openPatch } from './patch-read'

/**
 * Rebuilds partition `partition` of `manifest`'s version from the same partition of its
 * base and the partition's patch: a merge of the base's records (in file order) with the
 * patch's operations (in the same order), chunk by chunk (chunk-merge.ts), so the files
 * come out byte for byte as the build wrote them. Memory: one block of base index
 * entries, one inflated patch block, two output buffers.
 *
 * The headers are known from the manifest (record counts, sizes) and written first, so
 * each file is checksummed as it is written and compared with the manifest's at its end:
 * a mismatch, a bad patch or a base that is not the manifest's throws, and the files
 * written are removed (the caller fetches the full files instead).
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
  /**
   * The base is not served: its pages leave the page cache once read. Default false: a live
   * base's data pages are left as they were found, the hot ones kept (keep-resident.ts).
   */
  readonly dropBehind?: boolean
  /** The new files leave the page cache as they are written (not served before the swap). Default false. */
  readonly writeBehind?: boolean
  /** Awaited after about every PACE_BYTES written: a disk rate limit takes its tokens here. */
  readonly pace?: (bytes: number) => Promise<void>
  readonly signal?: AbortSignal
  /** Base index entries read at a time (tests make it small to cross blocks). Default 65536. */
  readonly indexBlockEntries?: number
}

const PACE_BYTES = 8 << 20

export interface AppliedPatch {
  readonly files: readonly FileEntry[]
  readonly ops: number
  /** Bytes written, for the node's accounting. */
  readonly bytesWritten: number
}

export async function applyPatch(o: ApplyPatchOptions): Promise<AppliedPatch> {
  const m = o.manifest
  const entry = m.partitionFiles[o.partition]
  if (entry === undefined) throw new RangeError(`partition ${o.partition} is not in the manifest`)
  const name = `patch of partition ${o.partition}`
  const { header, ops } = await openPatch(o.patchFile, name)
  const written: string[] = []
  const open: HashedOutput[] = []
  let merge: ChunkMerge | undefined
  try {
    if (m.base === undefined) throw new StoreError('RO_BAD_OPTION', `version ${m.version} names no base to apply ${name} to`)
    if (
      header.partition !== o.partition ||
      header.chunks !== m.chunks ||
      header.dataVersion !== m.dataVersion ||
      header.baseDataVersion !== m.base.dataVersion
    )
      throw new StoreError('RO_CORRUPT', `${name}: made for another partition or version`)
    if (m.checksumAlgorithm !== 'xxh64') throw new RangeError(`unknown checksum algorithm ${String(m.checksumAlgorithm)}`)
    const hasher = await createKeyHasher(m.keyHash)
    const codec = await baseCodec(o.baseDir, m)
    const indexHash = await createXXHash64()
    const dataHash = await createXXHash64()
    const next = async (): Promise<(HashedOp & { chunk: number }) | undefined> => {
      const r = await ops.next()
      if (r.done) return undefined
      const hash = hasher.hash(r.value.key)
      const value = r.value.op === PATCH_DELETE ? undefined : (r.value.value ?? Buffer.alloc(0))
      if (value !== undefined) checkNewRecord(hash, value, o.partition, m.partitions, codec, name)
      return { hash, key: r.value.key, value, chunk: chunkOf(hash, m.chunks) }
    }
    let op = await next()
    let count = 0
    /** Bytes written (finished chunks), and how many of all written were paced. */
    let bytesWritten = 0
    let paced = 0
    const files: FileEntry[] = []
    for (let chunk = 0; chunk < m.chunks; chunk++) {
      o.signal?.throwIfAborted()
      const want = expectedFiles(entry.files, o.partition, chunk, name)
      const records = (want.index.size - HEADER_SIZE) / INDEX_ENTRY_SIZE
      const fileId = partitionChunkFileId(m.store, m.dataVersion, o.partition, chunk)
      written.push(join(o.outDir, want.index.name), join(o.outDir, want.data.name))
      const index = new HashedOutput(join(o.outDir, want.index.name), indexHash, o.writeBehind === true)
      open.push(index)
      const data = new HashedOutput(join(o.outDir, want.data.name), dataHash, o.writeBehind === true)
      open.push(data)
      await index.append(encodeIndexHeader({ fileId, chunk, entryCount: records, dataSize: want.data.size }))
      await data.append(encodeDataHeader({ fileId, chunk, codec: codec.id, recordCount: records }))
      const keep =
        o.dropBehind === true ? undefined : await KeepResident.snapshot(join(o.baseDir, partitionDataFileName(o.partition, chunk)))
      merge = new ChunkMerge(o.baseDir, o.partition, chunk, hasher, index, data, o.dropBehind === true, keep, o.indexBlockEntries)
      for (; op !== undefined && op.chunk <= chunk; count++) {
        if (op.chunk < chunk) throw new StoreError('RO_CORRUPT', `${name}: operations out of order`)
        await merge.apply(op)
        const prev = op
        op = await next()
        if (op !== undefined && op.chunk === chunk && compareRecordOrder(op.hash, op.key, prev.hash, prev.key) <= 0)
          throw new StoreError('RO_CORRUPT', `${name}: operations out of order`)
        const done = bytesWritten + index.size + data.size
        if (o.pace !== undefined && done - paced >= PACE_BYTES) {
          await o.pace(done - paced)
          paced = done
          o.signal?.throwIfAborted()
        }
      }
      const m1 = merge
      merge = undefined
      await m1.finish()
      const gotIndex = await index.finish()
      const gotData = await data.finish()
      open.length = 0
      check(want.index, gotIndex)
      check(want.data, gotData)
      files.push(want.index, want.data)
      bytesWritten += gotIndex.size + gotData.size
      if (bytesWritten > paced) await o.pace?.(bytesWritten - paced)
      paced = bytesWritten
    }
    if (op !== undefined) throw new StoreError('RO_CORRUPT', `${name}: operations out of order`)
    // Pulls the rest of the body: its checksums are checked at its end.
    if (!(await ops.next()).done) throw new StoreError('RO_CORRUPT', `${name}: operations out of order`)
    return { files, ops: count, bytesWritten }
  } catch (err) {
    try {
      merge?.close()
    } catch {
      // Closing after a failure: the first error is the one to report.
    }
    for (const f of open) f.close()
    await ops.return(undefined)
    await Promise.all(written.map((f) => rm(f, { force: true })))
    throw err
  }
}

/**
 * The version's codec, its zstd dictionary read from the base's directory: a version whose
 * values a patch can carry shares its base's dictionary. A base without it is no base for
 * this patch (the partition is fetched whole), not a failure of the node.
 */
async function baseCodec(baseDir: string, m: VersionManifest): Promise<ValueCodec> {
  try {
    return await versionCodec(baseDir, m)
  } catch (err) {
    throw new StoreError('RO_CONFLICT', "the base does not hold the version's zstd dictionary", { cause: err })
  }
}

/**
 * A record the patch adds gets the checks a verify's walk gives every record (its CRC and
 * index entry are written here): its key in this partition, its value readable. The
 * base's records had them when the base was installed, so the rebuilt files need no walk.
 */
function checkNewRecord(hash: Uint8Array, value: Buffer, partition: number, partitions: number, codec: ValueCodec, name: string): void {
  if (masterPartition(hash, partitions) !== partition) throw new StoreError('RO_CORRUPT', `${name}: puts a key of another partition`)
  try {
    codec.decode(value)
  } catch (err) {
    throw new StoreError('RO_CORRUPT', `${name}: puts a value that does not decompress`, { cause: err })
  }
}

/** The manifest's entries of a chunk's two files. */
function expectedFiles(files: readonly FileEntry[], partition: number, chunk: number, name: string): { index: FileEntry; data: FileEntry } {
  const index = files.find((f) => f.name === partitionIndexFileName(partition, chunk))
  const data = files.find((f) => f.name === partitionDataFileName(partition, chunk))
  const records = index === undefined ? NaN : (index.size - HEADER_SIZE) / INDEX_ENTRY_SIZE
  if (index === undefined || data === undefined || !Number.isSafeInteger(records) || records < 0)
    throw new StoreError('RO_CORRUPT', `${name}: the manifest does not list chunk ${chunk}'s files`)
  return { index, data }
}

/**
 * The rebuilt files must be the build's, byte for byte: same size, same checksum, taken of
 * the bytes as they were written.
 */
function check(want: FileEntry, got: { readonly size: number; readonly checksum: string }): void {
  if (got.size !== want.size || got.checksum !== want.checksum)
    throw new StoreError(
      'RO_CHECKSUM_MISMATCH',
      `rebuilt ${want.name} has ${got.size} bytes and checksum ${got.checksum}, the build's ${want.size} and ${want.checksum}`,
    )
}
