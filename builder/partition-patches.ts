import { StoreError } from '../common/errors'
import { createFileChecksummer } from '../formats/store/chunk/checksum'
import { createKeyHasher } from '../formats/store/layout/key-hash'
import { PATCH_MAX_SHARE } from '../formats/store/patch/patch-file'
import type { PartitionEntry, PatchEntry, VersionManifest } from '../formats/store/layout/partition-files'
import { writePartitionPatch, type PartitionPatchTask } from './partition-diff'

/**
 * `build --base`: after the full build is written, one patch per partition against the
 * same partition of the base build (patch-file.ts, partition-diff.ts). A patch that would
 * not be much smaller than the partition's files is dropped.
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

/** Writes the patches of the tasks given, each into its `dir`: in this thread, or in the build's workers. */
export type PatchRunner = (tasks: readonly PartitionPatchTask[]) => Promise<readonly (PatchEntry | undefined)[]>

/**
 * The manifest with `base` and each worthwhile partition's patch; the patches are written
 * into `dir`. `maxShare`: largest patch kept, as a share of the partition's files (tests
 * pass Infinity to patch every partition). `run`: where the partitions are diffed (the
 * local engine passes its worker threads; by default here, one after the other).
 */
export async function writePartitionPatches(
  base: BaseBuild,
  dir: string,
  manifest: VersionManifest,
  maxShare: number = PATCH_MAX_SHARE,
  run: PatchRunner = patchInThisThread,
): Promise<VersionManifest> {
  if (base.manifest.chunks !== manifest.chunks)
    throw new StoreError(
      'RO_BAD_OPTION',
      `--base: the base has ${base.manifest.chunks} chunks per partition, this build ${manifest.chunks}`,
    )
  const tasks = manifest.partitionFiles.map((entry): PartitionPatchTask => ({
    baseDir: base.dir,
    dir,
    partition: entry.partition,
    chunks: manifest.chunks,
    baseDataVersion: base.manifest.dataVersion,
    dataVersion: manifest.dataVersion,
    limit: maxShare * entry.files.reduce((s, f) => s + f.size, 0),
    keyHash: manifest.keyHash,
    checksumAlgorithm: manifest.checksumAlgorithm,
  }))
  const patches = await run(tasks)
  const partitionFiles = manifest.partitionFiles.map((entry, i): PartitionEntry => {
    const patch = patches[i]
    return patch === undefined ? entry : { ...entry, patch }
  })
  return { ...manifest, partitionFiles, base: { version: base.manifest.version, dataVersion: base.manifest.dataVersion } }
}

async function patchInThisThread(tasks: readonly PartitionPatchTask[]): Promise<readonly (PatchEntry | undefined)[]> {
  const first = tasks[0]
  if (first === undefined) return []
  // Every task of a build has the same key hash and checksum algorithm.
  const hasher = await createKeyHasher(first.keyHash)
  const checksum = await createFileChecksummer(first.checksumAlgorithm)
  return tasks.map((task) => writePartitionPatch(task, hasher, checksum))
}
