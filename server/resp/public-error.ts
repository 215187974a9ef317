import { StoreError, type ErrorCode } from '../../common/errors'
import { publicErrorResponse } from '../http/http-util'

/**
 * The text of an error reply (`-<RO_CODE> <message>`) for a client of the RESP port. Like
 * HTTP's publicErrorResponse: codes about the request keep their message; codes about the
 * node (RO_UNAVAILABLE, RO_IO, RO_INTERNAL, corruption) get a fixed public message, so
 * no path, peer address, lower-level error or store content reaches a client. The detail
 * goes to the node's log instead.
 */
export function publicRespError(code: ErrorCode, detail: string): string {
  return publicRespErrorOf(new StoreError(code, detail))
}

/** The same for a caught error (anything that is not a StoreError is RO_INTERNAL). */
export function publicRespErrorOf(err: unknown): string {
  const e = publicErrorResponse(err).body.error
  return `${e.code} ${e.message}`
}
