import { statSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { StoreError } from '../common/errors'
import { createFileChecksummer } from '../formats/store/chunk/checksum'
import { createKeyHasher } from '../formats/store/layout/key-hash'
import { readManifest, writeManifest } from '../formats/store/layout/manifest-io'
import { PATCH_MAX_SHARE } from '../formats/store/patch/patch-file'
import type { PartitionEntry, PatchEntry, VersionManifest } from '../formats/store/layout/partition-files'
import { writePartitionPatch, type PartitionPatchTask } from './partition-diff'

/**
 * `build --base`: one patch per partition against the same partition of the base build
 * (patch-file.ts, partition-diff.ts), written once the partition's new files are. A patch
 * that would not be much smaller than the partition's files is dropped.
 */
export interface BaseBuild {
  readonly dir: string
  readonly manifest: VersionManifest
}

/** A local format-2 build output to patch against (an s3:// one is downloaded first: s3-base.ts). */
export async function readBaseBuild(dir: string): Promise<BaseBuild> {
  return { dir: resolve(dir), manifest: await readManifest(resolve(dir)) }
}

/** Every check a build against `base` makes before it starts (what fits, chunk count, the base's files). */
export function checkBase(
  base: BaseBuild,
  next: Pick<VersionManifest, 'store' | 'version' | 'keyHash' | 'compression' | 'partitions' | 'chunks'>,
): void {
  checkBaseFits(base.manifest, next)
  checkBaseChunks(base.manifest, next.chunks)
  checkBaseFiles(base)
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
 * Every partition file the base's manifest lists is there, at its size: a build made with
 * --patch-only keeps patches instead of the files, so it cannot be a base.
 */
export function checkBaseFiles(base: BaseBuild): void {
  for (const entry of base.manifest.partitionFiles)
    for (const f of entry.files) {
      const size = statSync(join(base.dir, f.name), { throwIfNoEntry: false })?.size
      if (size === undefined)
        throw new StoreError('RO_BAD_OPTION', `--base: ${f.name} is missing (a build made with --patch-only cannot be a base)`)
      if (size !== f.size) throw new StoreError('RO_CORRUPT', `--base: ${f.name} is ${size} bytes, its manifest says ${f.size}`)
    }
}

/** The chunk count must match too: chunks would not line up. */
export function checkBaseChunks(base: VersionManifest, chunks: number): void {
  if (base.chunks !== chunks)
    throw new StoreError('RO_BAD_OPTION', `--base: the base has ${base.chunks} chunks per partition, this build ${chunks}`)
}

/**
 * The task of partition `partition`'s patch, written into `dir`. `fileBytes`: the size of
 * the partition's new files; `maxShare`: the largest patch kept, as a share of them.
 */
export function partitionPatchTask(
  base: BaseBuild,
  dir: string,
  next: Pick<VersionManifest, 'chunks' | 'dataVersion' | 'keyHash' | 'checksumAlgorithm'>,
  partition: number,
  fileBytes: number,
  maxShare: number = PATCH_MAX_SHARE,
): PartitionPatchTask {
  return {
    baseDir: base.dir,
    dir,
    partition,
    chunks: next.chunks,
    baseDataVersion: base.manifest.dataVersion,
    dataVersion: next.dataVersion,
    limit: maxShare * fileBytes,
    keyHash: next.keyHash,
    checksumAlgorithm: next.checksumAlgorithm,
  }
}

/** The manifest naming `base` and the patches written (`patches[i]` of partition i; undefined: none). */
export function withPatches(base: BaseBuild, manifest: VersionManifest, patches: readonly (PatchEntry | undefined)[]): VersionManifest {
  const partitionFiles = manifest.partitionFiles.map((entry, i): PartitionEntry => {
    const patch = patches[i]
    return patch === undefined ? entry : { ...entry, patch }
  })
  return { ...manifest, partitionFiles, base: { version: base.manifest.version, dataVersion: base.manifest.dataVersion } }
}

/**
 * The manifest with `base` and each worthwhile partition's patch, written one after the
 * other in this thread into `dir` (the local engine writes them in its workers while it
 * reduces: engines/local/patch-phase.ts). `maxShare`: largest patch kept, as a share of the
 * partition's files (tests pass Infinity to patch every partition).
 */
export async function writePartitionPatches(
  base: BaseBuild,
  dir: string,
  manifest: VersionManifest,
  maxShare: number = PATCH_MAX_SHARE,
): Promise<VersionManifest> {
  checkBaseChunks(base.manifest, manifest.chunks)
  const hasher = await createKeyHasher(manifest.keyHash)
  const checksum = await createFileChecksummer(manifest.checksumAlgorithm)
  const patches = manifest.partitionFiles.map((entry) => {
    const bytes = entry.files.reduce((s, f) => s + f.size, 0)
    return writePartitionPatch(partitionPatchTask(base, dir, manifest, entry.partition, bytes, maxShare), hasher, checksum)
  })
  return withPatches(base, manifest, patches)
}

/** What `build --base` wrote: partitions that got a patch, the patches' bytes, the seconds the patches took. */
export interface PatchesWritten {
  readonly partitions: number
  readonly bytes: number
  readonly seconds: number
}

/**
 * The patches of a finished format-2 output `dir` against `base`, written into it with its
 * manifest rewritten to name them (the Ray engine, after finalize: its reducers run
 * elsewhere, so the diff runs here once every partition is written). With `patchOnly` the
 * full files of the partitions that got a patch are removed. A failure leaves `dir` as the
 * caller's to remove: it is still a build in progress.
 */
export async function patchFinishedOutput(base: BaseBuild, dir: string, patchOnly: boolean): Promise<PatchesWritten> {
  const t0 = performance.now()
  const manifest = await writePartitionPatches(base, dir, await readManifest(dir))
  const written = await keepPatches(dir, manifest, patchOnly, (performance.now() - t0) / 1000)
  await writeManifest(dir, manifest)
  return written
}

/**
 * What the patches `manifest` names add up to, once `dir` holds them; with `patchOnly` the
 * full files of the partitions that got one are removed from `dir` (both engines, before
 * the manifest is written).
 */
export async function keepPatches(dir: string, manifest: VersionManifest, patchOnly: boolean, seconds: number): Promise<PatchesWritten> {
  const made = manifest.partitionFiles.filter((e) => e.patch !== undefined)
  if (patchOnly) for (const e of made) for (const f of e.files) await rm(join(dir, f.name))
  return { partitions: made.length, bytes: made.reduce((s, e) => s + (e.patch?.size ?? 0), 0), seconds }
}
