import { readFile, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { fsyncDir, writeFileAtomic } from './live-pointer'
import { STALE_FILE } from './version-names'

/**
 * A store marked stale on a node: its reads answer 503 so clients go to other replicas.
 * Kept on disk (STALE in the store directory) so the mark survives a restart.
 */
export interface StaleMark {
  readonly reason: string
  readonly since: string
}

export async function readStaleMark(storeDir: string): Promise<StaleMark | undefined> {
  let text: string
  try {
    text = await readFile(join(storeDir, STALE_FILE), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  try {
    const parsed = JSON.parse(text) as Partial<StaleMark>
    return { reason: String(parsed.reason ?? 'stale'), since: String(parsed.since ?? '') }
  } catch {
    // A torn or edited file still means "stale": never serve by accident.
    return { reason: 'stale', since: '' }
  }
}

/** Write the mark durably (temp + fsync + rename + fsync dir). */
export async function writeStaleMark(storeDir: string, reason: string): Promise<StaleMark> {
  const mark: StaleMark = { reason, since: new Date().toISOString() }
  await writeFileAtomic(storeDir, STALE_FILE, `${JSON.stringify(mark)}\n`)
  return mark
}

export async function clearStaleMark(storeDir: string): Promise<void> {
  try {
    await unlink(join(storeDir, STALE_FILE))
    await fsyncDir(storeDir)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
}
