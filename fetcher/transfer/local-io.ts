import { StoreError } from '../../common/errors'

/**
 * Runs a local file system operation, turning its errno errors into StoreErrors: trouble
 * with our own disk is never worth a network retry, and a full disk gets its own code.
 */
export async function local<T>(what: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op()
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === undefined || err instanceof StoreError) throw err
    throw new StoreError(code === 'ENOSPC' || code === 'EDQUOT' ? 'RO_NO_SPACE' : 'RO_IO', `${what}: ${(err as Error).message}`, {
      cause: err,
    })
  }
}
