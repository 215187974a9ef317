import { unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { StoreError } from '../common/errors'
import { createFileChecksummer } from '../formats/store/chunk/checksum'
import { createKeyHasher, type KeyHasher } from '../formats/store/layout/key-hash'
import { PATCH_MAX_SHARE, patchFileName } from '../formats/store/patch/patch-file'
import { PatchWriter } from '../formats/store/patch/patch-writer'
import type { PartitionEntry, PatchEntry, VersionManifest } from '../formats/store/layout/partition-files'
import { compareRecordOrder, walkPartitionChunk, type HashedRecord } from '../formats/store/scan/partition-records'

/**
 * `build --base`: after the full build is written, one patch per partition against the
 * same partition of the base build (patch-file.ts). Both sides are walked chunk by chunk
 * in record order and merged, so memory is two read blocks and one patch block. A patch
 * that would not be much smaller than the partition's files is dropped.
 */
export interface BaseBuild {
  readonly dir: string
  readonly manifest: VersionManifest
}

/** What must match for a base's partitions to be patched into this build's. */
export function checkBaseFits(
  base: VersionManifest,
  next: Pick<VersionManifest, 'store' | 'version' | 'keyHash' | 'compression' | 'partitions'>,
): void {
  const bad = (msg: string): never => {
    throw new StoreError('RO_BAD_OPTION', `--base: ${msg}`)
  }
  if (base.store !== next.store) bad(`the base is store ${base.store}, not ${next.store}`)
  if (base.version >= next.version) bad(`the base is version ${base.version}, not older than ${next.version}`)
  if (base.keyHash !== next.keyHash) bad(`the base hashes keys with ${base.keyHash}`)
  if (base.compression !== next.compression) bad(`the base is compressed with ${base.compression}, this build with ${next.compression}`)
  if (base.partitions !== next.partitions) bad(`the base has ${base.partitions} partitions, the cluster ${next.partitions}`)
}

/**
 * The manifest with `base` and each worthwhile partition's patch; the patches are written
 * into `dir`. `maxShare`: largest patch kept, as a share of the partition's files (tests
 * pass Infinity to patch every partition).
 */
export async function writePartitionPatches(
  base: BaseBuild,
  dir: string,
  manifest: VersionManifest,
  maxShare: number = PATCH_MAX_SHARE,
): Promise<VersionManifest> {
  if (base.manifest.chunks !== manifest.chunks)
    throw new StoreError(
      'RO_BAD_OPTION',
      `--base: the base has ${base.manifest.chunks} chunks per partition, this build ${manifest.chunks}`,
    )
  const hasher = await createKeyHasher(manifest.keyHash)
  const checksum = await createFileChecksummer(manifest.checksumAlgorithm)
  const partitionFiles = manifest.partitionFiles.map((entry): PartitionEntry => {
    const patch = diffPartition(base, dir, manifest, entry, hasher, maxShare)
    return patch === undefined ? entry : { ...entry, patch: { ...patch, checksum: checksum(join(dir, patch.name)) } }
  })
  return { ...manifest, partitionFiles, base: { version: base.manifest.version, dataVersion: base.manifest.dataVersion } }
}

function diffPartition(
  base: BaseBuild,
  dir: string,
  m: VersionManifest,
  entry: PartitionEntry,
  hasher: KeyHasher,
  maxShare: number,
): Omit<PatchEntry, 'checksum'> | undefined {
  const p = entry.partition
  const name = patchFileName(p)
  const limit = maxShare * entry.files.reduce((s, f) => s + f.size, 0)
  const writer = new PatchWriter(join(dir, name), {
    partition: p,
    chunks: m.chunks,
    baseDataVersion: base.manifest.dataVersion,
    dataVersion: m.dataVersion,
  })
  try {
    for (let chunk = 0; chunk < m.chunks; chunk++) {
      diffChunk(walkPartitionChunk(base.dir, p, chunk, hasher), walkPartitionChunk(dir, p, chunk, hasher), writer)
      if (writer.size > limit) {
        writer.abandon()
        return undefined
      }
    }
  } catch (err) {
    writer.abandon()
    throw err
  }
  const done = writer.finish()
  if (done.size > limit) {
    unlinkSync(join(dir, name))
    return undefined
  }
  return { name, size: done.size, ops: done.ops }
}

/** The merge of one chunk's two sides: removed keys deleted, added and changed ones put. */
function diffChunk(old: Generator<HashedRecord>, now: Generator<HashedRecord>, writer: PatchWriter): void {
  try {
    let a = old.next()
    let b = now.next()
    while (!a.done || !b.done) {
      const c = a.done ? 1 : b.done ? -1 : compareRecordOrder(a.value.hash, a.value.key, b.value.hash, b.value.key)
      if (c < 0) {
        writer.delete((a.value as HashedRecord).key)
        a = old.next()
      } else if (c > 0) {
        const r = b.value as HashedRecord
        writer.put(r.key, r.value)
        b = now.next()
      } else {
        const r = b.value as HashedRecord
        if (!r.value.equals((a.value as HashedRecord).value)) writer.put(r.key, r.value)
        a = old.next()
        b = now.next()
      }
    }
  } finally {
    old.return(undefined)
    now.return(undefined)
  }
}
