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

  constructor(token: string | undefined) {
    this.digest = token === undefined || token === '' ? undefined : sha256(token)
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

/** Admin routes are disabled on this node (no token configured): HTTP 403. */
export class AdminDisabledError extends Error {
  constructor() {
    super('admin API disabled: start the node with --admin-token or ROSTORE_ADMIN_TOKEN')
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest()
}
