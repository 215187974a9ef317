import { realpath } from 'node:fs/promises'
import { resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { StoreError } from '../../common/errors'
import { FileSource } from './file'
import { HttpSource } from './http'
import type { FetchSource } from './source'

export interface OpenSourceOptions {
  /**
   * Prefixes a source must lie under: paths, file:// or http(s):// URLs. Compared on
   * whole path segments after normalising ("http://h/builds" allows "http://h/builds/x",
   * not "http://h/builds-old" nor "http://h/builds/../secret"). Absent: anything goes.
   */
  readonly allowedSources?: readonly string[]
}

const SCHEME = /^([a-z][a-z0-9+.-]*):/i

type Canonical = { readonly kind: 'file' | 'http'; readonly key: string }

/** Path or URL → a comparable form; local paths are resolved through symlinks when they
 *  exist, so a link inside an allowed tree cannot point the fetch elsewhere. */
async function canonical(source: string): Promise<Canonical> {
  const scheme = SCHEME.exec(source)?.[1]?.toLowerCase()
  if (scheme === undefined || scheme === 'file') {
    let path: string
    try {
      path = scheme === 'file' ? fileURLToPath(source) : resolve(source)
    } catch (err) {
      throw new StoreError('RO_BAD_REQUEST', `bad source ${source}: ${(err as Error).message}`)
    }
    path = await realpath(path).catch(() => path)
    return { kind: 'file', key: path.endsWith(sep) && path.length > 1 ? path.slice(0, -1) : path }
  }
  if (scheme === 'http' || scheme === 'https') {
    let url: URL
    try {
      url = new URL(source)
    } catch {
      throw new StoreError('RO_BAD_REQUEST', `bad source URL ${source}`)
    }
    // Files are found by appending names to the root: a query or fragment cannot survive that.
    if (url.search !== '' || url.hash !== '')
      throw new StoreError('RO_BAD_REQUEST', `source URL must not have a query or fragment: ${source}`)
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
    if (hidden) throw new StoreError('RO_BAD_REQUEST', `source URL hides path separators or dot segments: ${source}`)
    const path = url.pathname.replace(/\/+$/, '')
    return { kind: 'http', key: `${url.protocol}//${url.host.toLowerCase()}${path}` }
  }
  throw new StoreError(
    'RO_BAD_REQUEST',
    `unsupported source scheme "${scheme}:" in ${source} (supported: path, file://, http://, https://)`,
  )
}

function isUnder(candidate: Canonical, prefix: Canonical): boolean {
  if (candidate.kind !== prefix.kind) return false
  if (candidate.key === prefix.key) return true
  const base = prefix.key.endsWith('/') ? prefix.key : `${prefix.key}/`
  return candidate.key.startsWith(base)
}

/** Opens the source for a build output root, refusing it unless it is allow-listed. */
export async function openSource(source: string, opts: OpenSourceOptions = {}): Promise<FetchSource> {
  if (typeof source !== 'string' || source.length === 0) throw new StoreError('RO_BAD_REQUEST', 'empty fetch source')
  const c = await canonical(source)
  if (opts.allowedSources !== undefined) {
    const allowed = await Promise.all(opts.allowedSources.map(canonical))
    if (!allowed.some((a) => isUnder(c, a))) {
      throw new StoreError('RO_BAD_REQUEST', `source ${source} is not under an allowed source (${opts.allowedSources.join(', ')})`)
    }
  }
  return c.kind === 'file' ? new FileSource(c.key) : new HttpSource(source)
}
