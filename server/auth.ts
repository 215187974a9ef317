import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { StoreError } from '../common/errors'

/**
 * Admin authentication: `Authorization: Bearer <token>`. Both sides are hashed with
 * SHA-256 and compared with timingSafeEqual, so neither the content nor the length of
 * the configured token leaks through timing. With no token configured every admin call
 * is refused (403): admin is never open by default.
 */
export class AdminAuth {
  private readonly digest: Buffer | undefined

  /** Throws RO_BAD_OPTION for a token that could never authenticate (checkToken). */
  constructor(token: string | undefined) {
    this.digest = token === undefined || token === '' ? undefined : sha256(checkToken('the admin token', token))
  }

  get enabled(): boolean {
    return this.digest !== undefined
  }

  /** Throws RO_UNAUTHORIZED (401), or AdminDisabledError (403) when no token is configured. */
  check(req: IncomingMessage): void {
    if (!this.digest) throw new AdminDisabledError()
    const header = req.headers.authorization
    const m = typeof header === 'string' ? /^Bearer[ ]+(\S+)\s*$/i.exec(header) : null
    const given = m?.[1]
    // Always hash and compare, also without a header, so both paths cost the same.
    const ok = timingSafeEqual(sha256(given ?? ''), this.digest) && given !== undefined
    if (!ok) throw new StoreError('RO_UNAUTHORIZED', 'missing or wrong admin token')
  }
}

/** Longest token accepted: far more than any random token needs, far less than a header may carry. */
export const MAX_TOKEN_LENGTH = 4096

/**
 * The rule for every bearer token a node is configured with (the admin token, the read
 * token): 1 to 4096 visible ASCII characters (0x21-0x7E). A token travels in an
 * `Authorization: Bearer <token>` header, where whitespace separates words and control or
 * non-ASCII characters do not arrive intact, so a token holding any of them could never
 * match: it is refused when the node starts, with an error naming the position (never the
 * token). Returns the token.
 */
export function checkToken(what: string, token: string): string {
  if (token.length > MAX_TOKEN_LENGTH) {
    throw new StoreError('RO_BAD_OPTION', `${what} is longer than ${MAX_TOKEN_LENGTH} characters`)
  }
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i)
    if (c < 0x21 || c > 0x7e) {
      const kind =
        c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d
          ? 'whitespace'
          : c < 0x20 || c === 0x7f
            ? 'a control character'
            : 'a non-ASCII character'
      throw new StoreError(
        'RO_BAD_OPTION',
        `${what} has ${kind} at character ${i + 1} of ${token.length}: a bearer token must be visible ASCII (letters, digits, punctuation) with no spaces, or it can never authenticate`,
      )
    }
  }
  return token
}

/** Admin routes are disabled on this node (no token configured): HTTP 403. */
export class AdminDisabledError extends Error {
  constructor() {
    super('admin API disabled: start the node with --admin-token or ROSTORE_ADMIN_TOKEN')
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest()
}
