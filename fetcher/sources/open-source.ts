import { resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { StoreError } from '../../common/errors'
import { redactCredentials } from '../../common/redact'
import { parseS3Url } from '../../s3/s3-url'
import { FsGate } from '../transfer/fs-gate'
import { FileSource, type FileSourceCalls } from './file'
import { HttpSource } from './http'
import { isUrlIndex, UrlIndexSource } from './url-index'
import { isInsideDir, resolveLocalPath } from './local-path'
import type { FetchSource } from './source'

export interface OpenSourceOptions {
  /**
   * Prefixes a source must lie under: paths, file://, http(s):// or s3:// URLs. Compared on
   * whole path segments after normalising ("http://h/builds" allows "http://h/builds/x",
   * not "http://h/builds-old" nor "http://h/builds/../secret"); local paths and entries
   * are compared with their symlinks resolved. The query of a URL (a presigned URL's
   * credentials) is not part of the match. Absent: anything goes. (docs/API.md, "Allowed
   * sources".)
   */
  readonly allowedSources?: readonly string[]
  /** Bounds the file-system calls of local sources (node-wide); default: one of their own. */
  readonly gate?: FsGate
  readonly signal?: AbortSignal
  /** Test seam for FileSource. */
  readonly fileCalls?: FileSourceCalls
}

const SCHEME = /^([a-z][a-z0-9+.-]*):/i
const NEVER = new AbortController().signal

/** A source in comparable form: a local path with its symlinks resolved, or a normalised URL. */
export type Canonical = { readonly kind: 'file' | 'http' | 's3'; readonly key: string }

/** Path or URL → a comparable form; local paths with their symlinks resolved. */
async function canonical(source: string, gate: FsGate, signal: AbortSignal): Promise<Canonical> {
  const scheme = SCHEME.exec(source)?.[1]?.toLowerCase()
  if (scheme === undefined || scheme === 'file') {
    let path: string
    try {
      path = scheme === 'file' ? fileURLToPath(source) : resolve(source)
    } catch {
      throw new StoreError('RO_BAD_REQUEST', `bad source ${redactCredentials(source)}: not a valid file URL`)
    }
    path = await resolveLocalPath(path, gate, signal)
    return { kind: 'file', key: path.endsWith(sep) && path.length > 1 ? path.slice(0, -1) : path }
  }
  if (scheme === 's3') {
    try {
      const { bucket, key } = parseS3Url(source)
      return { kind: 's3', key: `s3://${bucket}/${key.replace(/\/+$/, '')}` }
    } catch (err) {
      throw new StoreError('RO_BAD_REQUEST', `bad source ${redactCredentials(source)}: ${(err as Error).message}`)
    }
  }
  if (scheme === 'http' || scheme === 'https') {
    let url: URL
    try {
      url = new URL(source)
    } catch {
      throw new StoreError('RO_BAD_REQUEST', `bad source URL ${redactCredentials(source)}`)
    }
    // The query rides along with every file's request (a token or SAS); a fragment would not.
    if (url.hash !== '') throw new StoreError('RO_BAD_REQUEST', `source URL must not have a fragment: ${redactCredentials(source)}`)
    // Servers decode %2F and %2E before resolving "..": refuse what the prefix check cannot see.
    const hidden = url.pathname.split('/').some((seg) => {
      let d: string
      try {
        d = decodeURIComponent(seg)
      } catch {
        return true
      }
      return d !== seg && (d.includes('/') || d.includes('\\') || d === '.' || d === '..')
    })
    if (hidden) throw new StoreError('RO_BAD_REQUEST', `source URL hides path separators or dot segments: ${redactCredentials(source)}`)
    const path = url.pathname.replace(/\/+$/, '')
    return { kind: 'http', key: `${url.protocol}//${url.host.toLowerCase()}${path}` }
  }
  throw new StoreError(
    'RO_BAD_REQUEST',
    `unsupported source scheme "${scheme}:" in ${redactCredentials(source)} (supported: path, file://, http://, https://, s3://)`,
  )
}

function isUnder(candidate: Canonical, prefix: Canonical): boolean {
  if (candidate.kind !== prefix.kind) return false
  if (candidate.kind === 'file') return isInsideDir(candidate.key, prefix.key)
  if (candidate.key === prefix.key) return true
  const base = prefix.key.endsWith('/') ? prefix.key : `${prefix.key}/`
  return candidate.key.startsWith(base)
}

/**
 * Checks a source (build output root, or an install's node directory) against the
 * allow-list without opening it: RO_BAD_REQUEST when it is malformed, of an unknown scheme
 * or outside every allowed prefix. Resolves with its canonical form (a local path with its
 * symlinks resolved, or a normalised URL).
 */
export async function checkSource(source: string, opts: OpenSourceOptions = {}): Promise<Canonical> {
  if (typeof source !== 'string' || source.length === 0) throw new StoreError('RO_BAD_REQUEST', 'empty source')
  const gate = opts.gate ?? new FsGate(1)
  const signal = opts.signal ?? NEVER
  const c = await canonical(source, gate, signal)
  if (opts.allowedSources !== undefined) {
    const allowed: Canonical[] = []
    for (const a of opts.allowedSources) allowed.push(await canonical(a, gate, signal))
    if (!allowed.some((a) => isUnder(c, a))) {
      throw new StoreError(
        'RO_BAD_REQUEST',
        redactCredentials(`source ${source} is not under an allowed source (${opts.allowedSources.join(', ')})`),
      )
    }
  }
  return c
}

/** Opens the source for a build output root, refusing it unless it is allow-listed. */
export async function openSource(source: string, opts: OpenSourceOptions = {}): Promise<FetchSource> {
  const c = await checkSource(source, opts)
  if (c.kind === 'http') {
    // Each file URL of an index is held to the allow-list as the index was.
    if (isUrlIndex(source)) return new UrlIndexSource(source, async (url) => void (await checkSource(url, opts)))
    return new HttpSource(source)
  }
  if (c.kind === 's3') {
    // Loaded only for an s3:// source: the S3 client is not part of every fetch.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { S3Source } = require('./s3') as typeof import('./s3')
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { sharedS3Client } = require('../../s3/shared-client') as typeof import('../../s3/shared-client')
    return new S3Source(source, () => sharedS3Client())
  }
  return new FileSource(source, {
    realRoot: c.key,
    ...(opts.gate === undefined ? {} : { gate: opts.gate }),
    ...(opts.fileCalls === undefined ? {} : { calls: opts.fileCalls }),
  })
}
