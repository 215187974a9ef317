import { readdir, rm, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { METADATA_FILE } from '../../formats/store/layout/metadata'
import { fsyncDir, readLivePointer, writeLivePointer } from './live-pointer'
import { isTmpName, isTrashName, LIVE_FILE, parseVersionDirName, sortVersions, versionDirName } from './version-names'

/**
 * Startup recovery of one store directory, run before anything is served from it. Every
 * step of install, swap, rollback and delete leaves the directory in a state this
 * function turns into "one complete live version":
 *
 * - install: the copy lives in `.tmp-install-*` until it is verified and renamed to
 *   `version-<V>` (an atomic rename), so a crash leaves a `.tmp-*` (removed here) or a
 *   complete version directory;
 * - swap/rollback: LIVE is replaced by rename, so it names the old or the new version;
 *   a crash may leave a `.tmp-file-*` temp pointer (removed here);
 * - delete/retention: the directory is renamed to `.trash-*` first, then removed, so a
 *   crash leaves a `.trash-*` (removed here) and never a half-deleted version directory.
 *
 * If LIVE is missing or names a version that is not there (a directory copied in by
 * hand, or tampered with), the newest complete version becomes live.
 */
export interface RecoveryResult {
  readonly storeDir: string
  /** `.tmp-*` and `.trash-*` entries removed. */
  readonly removed: readonly string[]
  /** Complete version directories found, ascending. */
  readonly versions: readonly number[]
  /** `version-*` directories without metadata.json (not rostore's doing; left alone). */
  readonly incomplete: readonly number[]
  readonly live: number | undefined
  /** Set when LIVE had to be rewritten or removed, with the reason. */
  readonly repaired?: string
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile()
  } catch {
    return false
  }
}

export async function recoverStoreDir(storeDir: string): Promise<RecoveryResult> {
  const entries = await readdir(storeDir, { withFileTypes: true })
  const removed: string[] = []
  const found: number[] = []
  const incomplete: number[] = []
  for (const e of entries) {
    if (isTmpName(e.name) || isTrashName(e.name)) {
      await rm(join(storeDir, e.name), { recursive: true, force: true })
      removed.push(e.name)
      continue
    }
    const v = parseVersionDirName(e.name)
    if (v === undefined || !e.isDirectory()) continue
    if (await isFile(join(storeDir, e.name, METADATA_FILE))) found.push(v)
    else incomplete.push(v)
  }
  if (removed.length > 0) await fsyncDir(storeDir)
  const versions = sortVersions(found)

  const pointer = await readLivePointer(storeDir)
  if (pointer.kind === 'ok' && versions.includes(pointer.version)) {
    return { storeDir, removed, versions, incomplete, live: pointer.version }
  }
  const why =
    pointer.kind === 'absent'
      ? 'LIVE is missing'
      : pointer.kind === 'invalid'
        ? `LIVE is unreadable (${JSON.stringify(pointer.text)})`
        : `LIVE names ${versionDirName(pointer.version)}, which is not there`
  const newest = versions[versions.length - 1]
  if (newest !== undefined) {
    await writeLivePointer(storeDir, newest)
    return { storeDir, removed, versions, incomplete, live: newest, repaired: `${why}: made version ${newest} live` }
  }
  if (pointer.kind !== 'absent') {
    await unlink(join(storeDir, LIVE_FILE))
    await fsyncDir(storeDir)
    return { storeDir, removed, versions, incomplete, live: undefined, repaired: `${why}: removed it (no versions)` }
  }
  return { storeDir, removed, versions, incomplete, live: undefined }
}
