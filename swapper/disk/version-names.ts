import { randomBytes } from 'node:crypto'
import { StoreError } from '../../common/errors'
import { isSafeName } from '../../formats/store/layout/layout'

/**
 * Names inside a data directory, pure (no I/O):
 *
 *   DIR/<store>/version-<V>/   one immutable node directory per version (V >= 1)
 *   DIR/<store>/LIVE           the live version number, replaced atomically
 *   DIR/<store>/STALE          present while the store is marked stale (reads get 503)
 *   DIR/<store>/PUSH           the last cluster push's record: live version, nodes that missed it
 *   DIR/<store>/DECISION       the push this node prepared for, and its votes and known outcomes
 *   DIR/<store>/.tmp-*         staging (installs, fetches, pointer temp files); removed at startup
 *   DIR/<store>/.trash-*       directories being deleted; removed at startup
 */
export const LIVE_FILE = 'LIVE'
export const STALE_FILE = 'STALE'
export const PUSH_RECORD_FILE = 'PUSH'
export const DECISION_FILE = 'DECISION'
export const VERSION_PREFIX = 'version-'
export const TMP_PREFIX = '.tmp-'
export const TRASH_PREFIX = '.trash-'

/** Versions are positive safe integers; the decimal form is at most 16 digits. */
const VERSION_TEXT = /^[1-9][0-9]{0,15}$/
const VERSION_DIR = /^version-([1-9][0-9]{0,15})$/

export function isValidVersion(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1
}

export function versionDirName(version: number): string {
  if (!isValidVersion(version)) throw new RangeError(`invalid version ${String(version)}`)
  return `${VERSION_PREFIX}${version}`
}

/** The version of a `version-<V>` directory name, or undefined for any other name. */
export function parseVersionDirName(name: string): number | undefined {
  const m = VERSION_DIR.exec(name)
  if (!m) return undefined
  const v = Number(m[1])
  return isValidVersion(v) ? v : undefined
}

/** Version text from a URL or a file: decimal digits only, no sign, no leading zero. */
export function parseVersionText(text: string): number | undefined {
  const t = text.trim()
  if (!VERSION_TEXT.test(t)) return undefined
  const v = Number(t)
  return isValidVersion(v) ? v : undefined
}

/** A version named by a request (JSON number or decimal string); RO_BAD_REQUEST otherwise. */
export function requestVersion(input: unknown, what = 'version'): number {
  if (isValidVersion(input)) return input
  if (typeof input === 'string' && input.length <= 16) {
    const v = parseVersionText(input)
    if (v !== undefined) return v
  }
  throw new StoreError('RO_BAD_REQUEST', `${what} must be a positive integer`)
}

/** A store name from a request or a directory listing; RO_BAD_REQUEST unless safe. */
export function checkStoreName(name: string): string {
  if (!isSafeName(name)) {
    throw new StoreError(
      'RO_BAD_REQUEST',
      `invalid store name ${JSON.stringify(name.slice(0, 140))}: letters, digits, ".", "_", "-", 1..128 characters, no ".."`,
    )
  }
  return name
}

export function isTmpName(name: string): boolean {
  return name.startsWith(TMP_PREFIX)
}

export function isTrashName(name: string): boolean {
  return name.startsWith(TRASH_PREFIX)
}

function uniqueSuffix(): string {
  return `${process.pid}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`
}

/** A fresh staging name, for example `.tmp-install-1234-lq2x3-0a1b2c3d`. */
export function tmpName(kind: string): string {
  if (!/^[a-z][a-z0-9-]{0,31}$/.test(kind)) throw new RangeError(`bad staging kind ${kind}`)
  return `${TMP_PREFIX}${kind}-${uniqueSuffix()}`
}

/** A fresh trash name for a directory about to be deleted. */
export function trashName(name: string): string {
  return `${TRASH_PREFIX}${name}-${uniqueSuffix()}`
}

export function sortVersions(versions: Iterable<number>): number[] {
  return [...new Set(versions)].sort((a, b) => a - b)
}

/** The version a plain rollback goes to: the newest one older than `live`. */
export function previousVersion(versions: readonly number[], live: number): number | undefined {
  let best: number | undefined
  for (const v of versions) if (v < live && (best === undefined || v > best)) best = v
  return best
}

/**
 * Versions retention deletes: everything older than the `keep` newest versions below
 * `live`. The live version and every version newer than it (staged for a swap, or
 * rolled back from) are always kept.
 */
export function retentionVictims(versions: readonly number[], live: number, keep: number): number[] {
  if (!Number.isSafeInteger(keep) || keep < 0) throw new RangeError(`keep must be a non-negative integer, got ${keep}`)
  const older = sortVersions(versions.filter((v) => v < live))
  return older.slice(0, Math.max(0, older.length - keep))
}
