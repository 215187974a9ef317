import { StoreError } from '../../common/errors'
import { redactCredentials } from '../../common/redact'
import { DEFAULT_BACKOFF } from '../transfer/backoff'
import { readSmall } from '../transfer/read-small'
import { HttpSource } from './http'
import type { FetchSource, ReadRequest, ReadResult } from './source'

/**
 * A build whose files are reached by one URL each: an S3 or GCS presigned URL signs one
 * object, so no single URL can be the root of a build. The source is then the URL of an
 * index (itself presigned) that maps every file of the build to its own URL; `rostore
 * presign` writes one. The index and every URL in it are allow-listed like any source
 * (scheme, host and path; the query is not matched) and shown with their query redacted.
 *
 *   { "kind": "rostore-url-index", "version": 1, "files": { "node-0/metadata.json": "https://...", ... } }
 */
export const URL_INDEX_KIND = 'rostore-url-index'
/** An http(s) source whose path ends so is an index, not a build root. */
export const URL_INDEX_SUFFIX = '.urls.json'
const MAX_INDEX_BYTES = 16 << 20

export function isUrlIndex(source: string): boolean {
  try {
    return new URL(source).pathname.endsWith(URL_INDEX_SUFFIX)
  } catch {
    return false
  }
}

/** The JSON of an index of `files` (relative name -> URL). */
export function urlIndexJson(files: ReadonlyMap<string, string>): string {
  return JSON.stringify({ kind: URL_INDEX_KIND, version: 1, files: Object.fromEntries(files) })
}

export class UrlIndexSource implements FetchSource {
  private readonly index: URL
  private readonly http: HttpSource
  private files: Promise<Map<string, URL>> | undefined
  private known: Map<string, URL> | undefined

  constructor(
    index: string,
    /** Refuses a file URL the node may not fetch (the allow-list); RO_BAD_REQUEST. */
    private readonly check: (url: string) => Promise<void>,
  ) {
    this.index = new URL(index)
    this.http = new HttpSource(index)
  }

  describe(name?: string): string {
    const url = name === undefined ? undefined : this.known?.get(name)
    if (url !== undefined) return redactCredentials(url.toString())
    const shown = redactCredentials(this.index.toString())
    return name === undefined ? shown : `${shown} (${name})`
  }

  close(): void {
    this.http.close()
  }

  async read(name: string, req: ReadRequest): Promise<ReadResult> {
    const files = await this.load(req.signal)
    const url = files.get(name)
    if (url === undefined) throw new StoreError('RO_FETCH_FAILED', `${this.describe()}: the index has no URL for ${name}`)
    return this.http.readUrl(url, this.describe(name), req)
  }

  /** The index, read once (again after a failure). */
  private load(signal: AbortSignal): Promise<Map<string, URL>> {
    this.files ??= this.readIndex(signal).then(
      (files) => (this.known = files),
      (err: unknown) => {
        this.files = undefined
        throw err
      },
    )
    return this.files
  }

  private async readIndex(signal: AbortSignal): Promise<Map<string, URL>> {
    const shown = this.describe()
    const self: FetchSource = { describe: () => shown, read: (_name, req) => this.http.readUrl(this.index, shown, req) }
    const bytes = await readSmall(self, 'index', {
      maxBytes: MAX_INDEX_BYTES,
      signal,
      retries: 2,
      backoff: DEFAULT_BACKOFF,
      stallTimeoutMs: 10_000,
    })
    const bad = (why: string): never => {
      throw new StoreError('RO_FETCH_FAILED', `${shown}: not a URL index: ${why}`)
    }
    let json: unknown
    try {
      json = JSON.parse(bytes.toString('utf8'))
    } catch {
      return bad('not JSON')
    }
    const j = json as { kind?: unknown; version?: unknown; files?: unknown }
    if (typeof json !== 'object' || json === null || j.kind !== URL_INDEX_KIND || j.version !== 1)
      return bad(`kind must be ${URL_INDEX_KIND}, version 1`)
    if (typeof j.files !== 'object' || j.files === null || Array.isArray(j.files)) return bad('"files" must map names to URLs')
    const files = new Map<string, URL>()
    for (const [name, value] of Object.entries(j.files as Record<string, unknown>)) {
      let url: URL | undefined
      try {
        url = typeof value === 'string' ? new URL(value) : undefined
      } catch {
        url = undefined
      }
      // One agent serves the index and its files: the same protocol for all.
      if (url === undefined || url.protocol !== this.index.protocol || url.hash !== '')
        return bad(`the URL of ${name} is not an ${this.index.protocol.slice(0, -1)} URL without a fragment`)
      await this.check(url.toString())
      files.set(name, url)
    }
    return files
  }
}
