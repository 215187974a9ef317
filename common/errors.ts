/**
 * The one error class of rostore. `code` is stable and documented in docs/ERRORS.md;
 * messages may change, codes never do. A caller's programming mistake (wrong argument
 * type, impossible option) throws TypeError/RangeError instead.
 */
export const ERROR_CODES = [
  'RO_BAD_INPUT', // an input file is malformed: the message names file, line/row, reason
  'RO_DUPLICATE_KEY', // the same key twice in the input with --on-duplicate error
  'RO_BAD_CLUSTER', // cluster.json is invalid
  'RO_BAD_OPTION', // an option value is out of range or inconsistent
  'RO_BAD_FORMAT', // a store file is not a rostore file, or of an unknown version
  'RO_CORRUPT', // a store file breaks an invariant (offsets, lengths, record checksum)
  'RO_CHECKSUM_MISMATCH', // a whole file does not match the checksum in the metadata
  'RO_IO', // a file system operation failed
  'RO_NOT_FOUND', // a named store, version or job does not exist
  'RO_CONFLICT', // the operation conflicts with another one in progress or with state
  'RO_FETCH_FAILED', // a fetch gave up after its retries
  'RO_NO_SPACE', // not enough free disk space for a fetch, or a full disk under a swap or rollback
  'RO_ABORTED', // the operation was cancelled
  'RO_UNAUTHORIZED', // missing or wrong token
  'RO_FORBIDDEN', // the operation is disabled on this node (admin without a configured token)
  'RO_BAD_REQUEST', // a request is malformed or names something invalid
  'RO_TOO_LARGE', // a request or key exceeds its bound
  'RO_UNAVAILABLE', // no replica could answer
  'RO_NOT_SERVING', // this node does not serve the store, or the key, in its live version: ask the nodes of the live layout
  'RO_PUSH_FAILED', // a cluster push did not go live
  'RO_INTERNAL', // an unexpected failure (a bug): the node's log has the details
  'RO_BUSY', // the node's budget for buffered request bytes is spent: retry later, or ask another replica
  'RO_NOT_READY', // a peer has the version's fetch under way but not this file yet: ask again later, or another source
] as const

export type ErrorCode = (typeof ERROR_CODES)[number]

export class StoreError extends Error {
  override readonly name = 'StoreError'
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

export function isStoreError(err: unknown, code?: ErrorCode): err is StoreError {
  return err instanceof StoreError && (code === undefined || err.code === code)
}

/** Message of anything thrown, for logs and summaries. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** Whether `code` is one of rostore's error codes (as a thread, a process or a peer sent it). */
export function isErrorCode(code: string | undefined): code is ErrorCode {
  return code !== undefined && (ERROR_CODES as readonly string[]).includes(code)
}

/**
 * The error a code and message sent across a thread or process stand for: a StoreError
 * with that code when it is one of ours, else a plain Error.
 */
export function errorFromCode(code: string | undefined, message: string): Error {
  return isErrorCode(code) ? new StoreError(code, message) : new Error(message)
}
