/**
 * What a failed fetch leaves for the next one. A fetch given a `resumeDir` does not delete
 * its copy when it fails (its source broke, the push was cancelled, a file did not match
 * its checksum): the files it verified and the partial `.part` files are moved to
 * `resumeDir` with the manifest they belong to. The next fetch of the same manifest (the
 * same version of the same build) takes that directory over and downloads only the rest:
 * the verified files are kept, each `.part` is resumed (its bytes re-hashed, so the
 * file's checksum still covers every byte). Any other manifest discards it.
 */
import { readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FileEntry } from '../formats/store/layout/metadata'

/** The manifest bytes a kept copy belongs to (not `metadata.json`: that marks a complete copy). */
export const RESUME_MANIFEST = 'metadata.json.resume'

/**
 * Moves `resumeDir` to `destDir` when it was kept for exactly `manifest`; else removes it.
 * Resolves with whether it was taken over.
 */
export async function takeOverKept(resumeDir: string, destDir: string, manifest: Buffer): Promise<boolean> {
  let kept: Buffer
  try {
    kept = await readFile(join(resumeDir, RESUME_MANIFEST))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    await rm(resumeDir, { recursive: true, force: true })
    return false
  }
  if (!kept.equals(manifest)) {
    await rm(resumeDir, { recursive: true, force: true })
    return false
  }
  await rename(resumeDir, destDir)
  await rm(join(destDir, RESUME_MANIFEST), { force: true })
  return true
}

/** Keeps the copy in `destDir` as `resumeDir` for the next fetch of `manifest` (replacing an older one). */
export async function keepForResume(destDir: string, resumeDir: string, manifest: Buffer): Promise<void> {
  await writeFile(join(destDir, RESUME_MANIFEST), manifest)
  await rm(resumeDir, { recursive: true, force: true })
  await rename(destDir, resumeDir)
}

/**
 * Bytes a taken-over copy already holds, per file of the manifest: complete files (renamed
 * from `.part` only once verified) and partial ones. Anything else in it is removed.
 */
export async function keptBytes(
  destDir: string,
  files: readonly FileEntry[],
): Promise<{ complete: Set<string>; bytes: Map<string, number> }> {
  const sizes = new Map(files.map((f) => [f.name, f.size]))
  const complete = new Set<string>()
  const bytes = new Map<string, number>()
  for (const name of await readdir(destDir)) {
    const base = name.endsWith('.part') ? name.slice(0, -'.part'.length) : name
    const want = sizes.get(base)
    const size = (await stat(join(destDir, name))).size
    if (want === undefined || size > want || (name === base && size !== want)) {
      await rm(join(destDir, name), { recursive: true, force: true })
      continue
    }
    if (name === base) complete.add(name)
    bytes.set(base, Math.max(bytes.get(base) ?? 0, size))
  }
  return { complete, bytes }
}
