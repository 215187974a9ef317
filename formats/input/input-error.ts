/**
 * How input readers report trouble. Every message starts with where it happened, so a user
 * can jump to it: `path:line: reason` for text formats, `path: row N: reason` for
 * Parquet/Arrow, `path: reason` when no position applies (open, header, schema).
 */
import { StoreError } from '../../common/errors'

export function badInput(where: string, reason: string, cause?: unknown): StoreError {
  return new StoreError('RO_BAD_INPUT', `${where}: ${reason}`, cause === undefined ? undefined : { cause })
}

export function atLine(path: string, line: number): string {
  return `${path}:${line}`
}

export function atRow(path: string, row: number): string {
  return `${path}: row ${row}`
}

/**
 * A problem with one field value, found by code that does not know the record's position
 * (row-value.ts). Readers catch it and rethrow `badInput(position, message)`.
 */
export class FieldError extends Error {
  override readonly name = 'FieldError'
}

/** Codes that mean "this path is not a readable input file": the user's mistake, not the disk's. */
const BAD_INPUT_CODES = new Set(['ENOENT', 'EACCES', 'EPERM', 'EISDIR', 'ENOTDIR', 'ELOOP', 'ENAMETOOLONG'])

// Duck-typed rather than `instanceof Error`: errors may come from another realm (a vm
// context, as under jest), where they are not instances of this realm's Error.
function systemErrorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined
  const { code, syscall } = err as NodeJS.ErrnoException
  return typeof code === 'string' && typeof syscall === 'string' ? code : undefined
}

/** The message of anything thrown (libraries here also throw plain strings). */
export function reasonOf(err: unknown): string {
  if (typeof err === 'object' && err !== null && typeof (err as { message?: unknown }).message === 'string') {
    return (err as { message: string }).message
  }
  return String(err)
}

/**
 * Turns a file system error met while opening or reading `path` into a StoreError naming
 * the file; anything else (our own StoreErrors, abort reasons) passes through unchanged.
 * A missing or unreadable file is bad input; other I/O failures (EIO, EMFILE) are RO_IO,
 * since retrying may help and the input itself may be fine.
 */
export function wrapFileError(path: string, err: unknown): unknown {
  if (err instanceof StoreError) return err
  const code = systemErrorCode(err)
  if (code === undefined) return err
  const message = reasonOf(err)
  if (BAD_INPUT_CODES.has(code)) return badInput(path, `cannot read file: ${message}`, err)
  return new StoreError('RO_IO', `${path}: reading failed: ${message}`, { cause: err })
}

/** Byte ranges only make sense for line-based formats; asking for one elsewhere is a bug. */
export function refuseRange(format: string, opts: { readonly start?: number; readonly end?: number }): void {
  if (opts.start !== undefined || opts.end !== undefined) {
    throw new RangeError(`${format} files cannot be read by byte range; plan one split per file`)
  }
}

/**
 * A parsing library's failure (apache-arrow, hyparquet: some throw strings) as bad
 * input saying where and what failed; file system errors and our own errors keep their
 * own classification and wording.
 */
export function libraryFailure(where: string, what: string, err: unknown): unknown {
  if (err instanceof StoreError) return err
  const wrapped = wrapFileError(where, err)
  if (wrapped !== err) return wrapped
  return badInput(where, `${what}: ${reasonOf(err)}`, err)
}
