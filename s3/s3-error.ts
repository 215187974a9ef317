import type { S3Config } from './aws-config'
import { formatS3Url, type S3Location } from './s3-url'
import { decodeEntities, element } from './xml'

/** S3 error codes worth a retry: the store is busy or unwell, not refusing. */
const TRANSIENT_CODES = new Set(['SlowDown', 'InternalError', 'ServiceUnavailable', 'RequestTimeout', 'RequestTimeTooSkewed'])

/** What to tell the user for the refusals that have one obvious cause. */
function hint(code: string | undefined, status: number, loc: S3Location, config: S3Config | undefined): string {
  const creds = config === undefined ? '' : ` (credentials from ${config.origin})`
  switch (code) {
    case 'NoSuchBucket':
      return `: no bucket ${loc.bucket}${config === undefined ? '' : ` at ${config.endpoint.origin}`}`
    case 'NoSuchKey':
      return ': no such object'
    case 'InvalidAccessKeyId':
      return `: the store does not know this access key${creds}`
    case 'SignatureDoesNotMatch':
      return `: the request signature does not match: wrong secret key${creds}`
    case 'AccessDenied':
      return `: access denied${creds}`
    case 'ExpiredToken':
    case 'TokenRefreshRequired':
      return `: the session token has expired${creds}`
    default:
      return status === 403 ? `: forbidden${creds}` : status === 404 ? ': not found' : ''
  }
}

/**
 * An S3 request that the store refused or failed: `status` and S3's `code`. The message
 * names the s3:// location, the code and a hint; never the credentials nor S3's own
 * message (which can quote the string to sign).
 */
export class S3Error extends Error {
  override readonly name = 'S3Error'
  readonly status: number
  readonly code: string | undefined
  /** Whether asking again may succeed (5xx, throttling, a cut or odd answer). */
  readonly transient: boolean

  constructor(message: string, o: { status: number; code?: string; transient?: boolean }) {
    super(message)
    this.status = o.status
    this.code = o.code
    this.transient = o.transient ?? (o.status >= 500 || o.status === 429 || o.status === 408 || TRANSIENT_CODES.has(o.code ?? ''))
  }

  /** From an error document (or an empty body: HEAD answers have none). */
  static fromBody(loc: S3Location, status: number, xml: string, config?: S3Config): S3Error {
    const code = element(xml, 'Code')
    return S3Error.fromStatus(loc, status, config, code === undefined ? undefined : decodeEntities(code))
  }

  static fromStatus(loc: S3Location, status: number, config: S3Config | undefined, code: unknown): S3Error {
    const c = typeof code === 'string' && /^[A-Za-z0-9.]{1,64}$/.test(code) ? code : undefined
    const label = c === undefined ? `HTTP ${status}` : `${c} (HTTP ${status})`
    return new S3Error(`${formatS3Url(loc)}: ${label}${hint(c, status, loc, config)}`, { status, ...(c === undefined ? {} : { code: c }) })
  }

  /** The store refused for good: missing, forbidden, bad credentials. */
  get permanent(): boolean {
    return !this.transient
  }
}
