import { fsyncDir } from '../../common/fs-durable'
import { slowDiskDelay } from '../../common/test-slow-disk'
import { open, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../common/errors'
import { nativeFunctions, type NativeFunctions } from '../../common/native'
import { crashPoint, crashPointArmed } from './crash-points'
import { LIVE_FILE, parseVersionText, tmpName } from './version-names'

/**
 * The crash-safe pointer to the live version: `DIR/<store>/LIVE` holds the version number
 * in decimal. It is replaced, never edited: write a temp file, fsync it, rename it over
 * LIVE, fsync the directory. A reader of the directory sees the old pointer or the new
 * one, before and after a crash; a temp file left by a crash is a `.tmp-*` that recovery
 * removes.
 */

export { fsyncDir }

/**
 * Replace `dir/name` with `content` atomically (temp + fsync + rename + fsync dir). With the
 * addon that is one job on the libuv pool instead of eight file-system calls, each a round
 * trip through the pool; without it, the same steps from here. The crash points fire
 * between the same steps either way.
 */
export async function writeFileAtomic(dir: string, name: string, content: string | Uint8Array): Promise<void> {
  await slowDiskDelay()
  const native = nativeFunctions()
  if (native) await writeInOneJob(native, dir, name, content)
  else await writeStepByStep(dir, name, content)
}

async function writeInOneJob(native: NativeFunctions, dir: string, name: string, content: string | Uint8Array): Promise<void> {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content
  const stopAfter = crashPointArmed('pointer:temp-written') ? 1 : crashPointArmed('pointer:renamed') ? 2 : 0
  try {
    await native.writeFileDurably(dir, tmpName('file'), name, bytes, stopAfter)
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    throw new StoreError(
      writeErrorCode(err),
      `cannot write ${join(dir, name)}: ${e.syscall ?? 'write'}: ${e.message} (${e.code ?? 'unknown'})`,
      {
        cause: err,
      },
    )
  }
  crashPoint('pointer:temp-written')
  crashPoint('pointer:renamed')
}

async function writeStepByStep(dir: string, name: string, content: string | Uint8Array): Promise<void> {
  const tmp = join(dir, tmpName('file'))
  try {
    const fh = await open(tmp, 'wx', 0o644)
    try {
      await fh.writeFile(content)
      await fh.sync()
    } finally {
      await fh.close()
    }
    crashPoint('pointer:temp-written')
    await rename(tmp, join(dir, name))
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined)
    throw new StoreError(writeErrorCode(err), `cannot write ${join(dir, name)}: ${(err as Error).message}`, { cause: err })
  }
  crashPoint('pointer:renamed')
  await fsyncDir(dir)
}

/** A full disk (or quota) is RO_NO_SPACE, so an operator sees what to free; anything else RO_IO. */
function writeErrorCode(err: unknown): 'RO_NO_SPACE' | 'RO_IO' {
  const code = (err as NodeJS.ErrnoException).code
  return code === 'ENOSPC' || code === 'EDQUOT' ? 'RO_NO_SPACE' : 'RO_IO'
}

export async function writeLivePointer(storeDir: string, version: number): Promise<void> {
  await writeFileAtomic(storeDir, LIVE_FILE, `${version}\n`)
}

export type PointerState =
  { readonly kind: 'absent' } | { readonly kind: 'ok'; readonly version: number } | { readonly kind: 'invalid'; readonly text: string }

/** What LIVE says: absent, a version, or something unreadable (never written by rostore). */
export async function readLivePointer(storeDir: string): Promise<PointerState> {
  let text: string
  try {
    text = await readFile(join(storeDir, LIVE_FILE), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' }
    throw new StoreError('RO_IO', `cannot read ${join(storeDir, LIVE_FILE)}: ${(err as Error).message}`, { cause: err })
  }
  const version = text.length <= 32 ? parseVersionText(text) : undefined
  return version === undefined ? { kind: 'invalid', text: text.slice(0, 32) } : { kind: 'ok', version }
}
