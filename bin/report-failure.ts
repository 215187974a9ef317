import { isStoreError } from '../common/errors'
import { redactCredentials } from '../common/redact'

/** One line on stderr naming the error code; exit 1. Stack traces only for our own bugs. */
export function reportFailure(err: unknown): never {
  if (isStoreError(err)) {
    process.stderr.write(`rostore: ${redactCredentials(err.message)} [${err.code}]\n`)
  } else if (err instanceof Error) {
    process.stderr.write(`rostore: internal error: ${redactCredentials(err.stack ?? err.message)}\n`)
  } else {
    process.stderr.write(`rostore: ${String(err)}\n`)
  }
  process.exit(1)
}
