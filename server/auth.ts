import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { StoreError } from '../common/errors'
import type { Logger } from './log'

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
    const given = bearerOf(req)
    // Always hash and compare, also without a header, so both paths cost the same.
    const ok = timingSafeEqual(sha256(given ?? ''), this.digest) && given !== undefined
    if (!ok) throw new StoreError('RO_UNAUTHORIZED', 'missing or wrong admin token')
  }

  /** Whether `given` is the admin token (false when admin is disabled). */
  matches(given: string): boolean {
    return this.digest !== undefined && timingSafeEqual(sha256(given), this.digest)
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

/**
 * Read authentication, off by default: with a read token configured (`--read-token`,
 * `ROSTORE_READ_TOKEN`), HTTP read routes want `Authorization: Bearer <token>` and RESP
 * connections `AUTH <token>` before any read. Compared like the admin token (SHA-256 +
 * timingSafeEqual). HTTP reads also accept the admin token (whoever may swap a store may
 * read it, and admin tools need no second secret); RESP AUTH accepts the read token only,
 * so the admin secret never travels over the port opened to every service.
 */
export class ReadAuth {
  private readonly digest: Buffer | undefined

  /**
   * Throws RO_BAD_OPTION for a token that could never authenticate (checkToken). `what`
   * names the token in errors: the same rule guards /metrics with the metrics token.
   */
  constructor(
    token: string | undefined,
    private readonly admin?: AdminAuth,
    private readonly what = 'read token',
  ) {
    this.digest = token === undefined || token === '' ? undefined : sha256(checkToken(`the ${what}`, token))
  }

  get enabled(): boolean {
    return this.digest !== undefined
  }

  /** Whether `given` is the read token (bytes, as a RESP argument arrives). */
  matches(given: Uint8Array | string): boolean {
    if (!this.digest) return false
    return timingSafeEqual(sha256(given), this.digest)
  }

  /** HTTP: throws RO_UNAUTHORIZED unless the request carries the read (or admin) token. */
  check(req: IncomingMessage): void {
    const header = req.headers.authorization
    if (!this.accepts(typeof header === 'string' ? header : undefined)) {
      throw new StoreError('RO_UNAUTHORIZED', `missing or wrong ${this.what}`)
    }
  }

  /** Whether an Authorization field's value (or none) passes check(). */
  accepts(authorization: string | undefined): boolean {
    if (!this.digest) return true
    const given = bearerIn(authorization)
    const ok = this.matches(given ?? '') && given !== undefined
    return ok || (given !== undefined && this.admin?.matches(given) === true)
  }
}

/**
 * Routes that give data out in bulk (the dump streams): the admin token, or the read
 * token where reads are protected. Without a read token configured only the admin token
 * opens them (reads are then public, bulk extraction is not).
 */
export function checkAdminOrRead(req: IncomingMessage, admin: AdminAuth, read: ReadAuth): void {
  const given = bearerOf(req)
  if (given !== undefined && read.enabled && read.matches(given)) return
  admin.check(req)
}

function bearerOf(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization
  return bearerIn(typeof header === 'string' ? header : undefined)
}

function bearerIn(header: string | undefined): string | undefined {
  const m = header === undefined ? null : /^Bearer[ ]+(\S+)\s*$/i.exec(header)
  return m?.[1]
}

function sha256(text: Uint8Array | string): Buffer {
  const h = createHash('sha256')
  return (typeof text === 'string' ? h.update(text, 'utf8') : h.update(text)).digest()
}

/** Says at startup when admin routes are off or guarded by a guessable token. */
export function warnAboutAuth(auth: AdminAuth, token: string | undefined, log: Logger): void {
  if (!auth.enabled) log.warn('admin-disabled', { reason: 'no admin token configured; admin routes answer 403' })
  else if ((token ?? '').length < 16) log.warn('admin-token-short', { reason: 'use at least 16 random characters' })
}
