import { StoreError } from '../../common/errors'
import { RestartFromZeroError } from '../sources/source'
import { StallError } from './stall-guard'

/** Network and file-system errno codes, as a kind of failure that names nothing. */
const KINDS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ECONNABORTED: 'connection aborted',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  EHOSTDOWN: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENETDOWN: 'network unreachable',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed',
  EAI_FAIL: 'host name lookup failed',
  ERR_STREAM_PREMATURE_CLOSE: 'connection closed before the end of the response',
  UND_ERR_SOCKET: 'connection reset',
  EIO: 'file system I/O error',
  ESTALE: 'stale file handle (remote file system)',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files',
}

/** Errors whose messages rostore wrote itself from what it asked for, never from what it received. */
export class FetchFailure extends Error {
  override readonly name: string = 'FetchFailure'
}

/**
 * What to say about a failed read in a job error, without echoing anything the source or
 * the network sent (bytes of a file, a peer's address, a status text): rostore's own
 * errors keep their message, errno errors become a kind of failure, anything else a plain
 * "unexpected error". The full error stays in the `cause` for the node's log.
 */
export function failureReason(err: unknown): string {
  if (err instanceof StoreError || err instanceof StallError || err instanceof RestartFromZeroError || err instanceof FetchFailure) {
    return err.message
  }
  const code = (err as { code?: unknown } | undefined)?.code
  if (typeof code === 'string') {
    if (code.startsWith('HPE_')) return 'malformed HTTP response'
    if (/CERT|SSL|TLS/.test(code)) return `TLS handshake failed (${code})`
    return KINDS[code] ?? `error ${code}`
  }
  if (err instanceof Error && err.message === 'aborted') return 'connection closed before the end of the response'
  return 'unexpected error (see the node log)'
}
