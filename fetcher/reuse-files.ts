import { link, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DICTIONARY_FILE } from '../formats/store/chunk/dictionary-file'
import { METADATA_FILE, type FileEntry, type StoreMetadata } from '../formats/store/layout/metadata'
import { MANIFEST_FILE, parsePartitionFileName, type VersionManifest } from '../formats/store/layout/partition-files'

/** Files a format-2 fetch need not move: left by a failed fetch, or in an installed version of the same data. */
export interface Reusable {
  readonly path: string
  readonly checksum: string
  readonly size: number
}

/**
 * Files a failed fetch left in `dir` (each at its final name only once verified against
 * the checksum of the manifest beside it), when that manifest is of the same data.
 */
export async function resumableFiles(dir: string | undefined, m: VersionManifest): Promise<Map<string, Reusable>> {
  const out = new Map<string, Reusable>()
  if (dir === undefined) return out
  let left: Partial<VersionManifest>
  try {
    left = JSON.parse(await readFile(join(dir, MANIFEST_FILE), 'utf8')) as Partial<VersionManifest>
  } catch {
    return out
  }
  if (left.store !== m.store || left.dataVersion !== m.dataVersion || left.checksumAlgorithm !== m.checksumAlgorithm) return out
  for (const e of left.partitionFiles ?? [])
    for (const f of e.files) out.set(f.name, { path: join(dir, f.name), checksum: f.checksum, size: f.size })
  const d = left.dictionary
  if (d) out.set(d.name, { path: join(dir, d.name), checksum: d.checksum, size: d.size })
  return out
}

/** Files of installed format-2 versions of the same store and data version, by name. */
export async function reusableFiles(dirs: readonly string[], m: VersionManifest): Promise<Map<string, Reusable>> {
  const out = new Map<string, Reusable>()
  for (const dir of dirs) {
    let meta: Partial<StoreMetadata>
    try {
      meta = JSON.parse(await readFile(join(dir, METADATA_FILE), 'utf8')) as Partial<StoreMetadata>
    } catch {
      continue
    }
    if (meta.store !== m.store || meta.held === undefined || (meta.dataVersion ?? meta.version) !== m.dataVersion) continue
    for (const f of [...(meta.files ?? []), ...(meta.dictionary ? [meta.dictionary] : [])]) {
      if (parsePartitionFileName(f.name) !== undefined || f.name === DICTIONARY_FILE)
        out.set(f.name, { path: join(dir, f.name), checksum: f.checksum, size: f.size })
    }
  }
  return out
}

export async function tryLink(from: Reusable | undefined, f: FileEntry, to: string): Promise<boolean> {
  if (from === undefined || from.checksum !== f.checksum || from.size !== f.size) return false
  try {
    await link(from.path, to)
    return true
  } catch {
    // Another file system, a file deleted meanwhile: download it instead.
    return false
  }
}
