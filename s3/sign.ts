/**
 * Signature Version 4 through the `aws4` library (docs/DISTRIBUTED.md says why that one):
 * the typed slice of it that rostore uses.
 */
import type { S3Config } from './aws-config'

interface Aws4Request {
  host: string
  path: string
  method: string
  service: string
  region: string
  headers: Record<string, string>
  signQuery?: boolean
}

interface Aws4 {
  sign(request: Aws4Request, credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string }): Aws4Request
}

const aws4 = require('aws4') as Aws4

export interface UnsignedRequest {
  readonly method: string
  readonly host: string
  /** Path and query, percent-encoded. */
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
}

/** The request with its Authorization (and X-Amz-Date, session token) headers added. */
export function signRequest(r: UnsignedRequest, config: S3Config): { path: string; headers: Record<string, string> } {
  const signed = aws4.sign(
    { method: r.method, host: r.host, path: r.path, headers: { ...r.headers }, service: 's3', region: config.region },
    config.credentials,
  )
  return { path: signed.path, headers: signed.headers }
}

/**
 * A presigned GET URL for one object, valid `expiresSeconds` (at most a week, S3's bound):
 * what `rostore presign` prints and the tests use to stand for a URL handed out by others.
 */
export function presignGet(r: { host: string; path: string; protocol: string }, config: S3Config, expiresSeconds: number): string {
  const sep = r.path.includes('?') ? '&' : '?'
  const signed = aws4.sign(
    {
      method: 'GET',
      host: r.host,
      path: `${r.path}${sep}X-Amz-Expires=${expiresSeconds}`,
      headers: {},
      service: 's3',
      region: config.region,
      signQuery: true,
    },
    config.credentials,
  )
  return `${r.protocol}//${r.host}${signed.path}`
}
