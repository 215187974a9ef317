/**
 * `s3://bucket/key` locations: the one spelling every AWS-compatible tool understands. The
 * endpoint (AWS, MinIO, Ceph RGW, R2...) comes from the configuration, not the URL.
 */

export interface S3Location {
  readonly bucket: string
  /** The object key or prefix, without a leading '/'; '' for the whole bucket. */
  readonly key: string
}

const S3_URL = /^s3:\/\//i

/** Whether `path` names a location in object storage (`s3://...`). */
export function isS3Url(path: string): boolean {
  return S3_URL.test(path)
}

/**
 * Bucket names as S3 allows them (3-63 characters of lower-case letters, digits, dots and
 * hyphens); some S3-compatible stores allow more (upper case, underscores), so those are
 * accepted too. Anything that could change the request's path or host is refused.
 */
const BUCKET = /^[a-zA-Z0-9][a-zA-Z0-9._-]{1,62}$/

/** Parses `s3://bucket/key`; RangeError naming what is wrong (the callers turn it into their code). */
export function parseS3Url(url: string): S3Location {
  if (!isS3Url(url)) throw new RangeError(`not an s3:// URL: ${url}`)
  const rest = url.slice('s3://'.length)
  const slash = rest.indexOf('/')
  const bucket = slash === -1 ? rest : rest.slice(0, slash)
  const key = slash === -1 ? '' : rest.slice(slash + 1)
  if (bucket.includes('@'))
    throw new RangeError('s3:// URLs carry no credentials: give them in the environment or ~/.aws (docs/DISTRIBUTED.md)')
  if (!BUCKET.test(bucket) || bucket.includes('..')) throw new RangeError(`bad bucket name in s3://${bucket}/`)
  if (/[?#]/.test(key)) throw new RangeError('an s3:// URL has no query or fragment')
  // Keys are names, not paths, to S3; but "." and ".." segments would be folded away by
  // a client that normalises and by the allow-list, so they are refused here too.
  if (key.split('/').some((s) => s === '.' || s === '..')) throw new RangeError('an s3:// key must not contain "." or ".." segments')
  if (key.includes('\0') || key.startsWith('/')) throw new RangeError('bad s3:// key')
  return { bucket, key }
}

export function formatS3Url(loc: S3Location): string {
  return `s3://${loc.bucket}/${loc.key}`
}

/** `prefix` as a "directory": '' or ending in '/'. */
export function asPrefix(key: string): string {
  return key === '' || key.endsWith('/') ? key : `${key}/`
}

/** The location of `name` (a relative path like "node-3/0.data") under a prefix. */
export function childOf(root: S3Location, name: string): S3Location {
  return { bucket: root.bucket, key: `${asPrefix(root.key)}${name}` }
}
