import http from 'node:http'
import https from 'node:https'
import { StoreError } from '../../common/errors'
import { redactCredentials } from '../../common/redact'
import { FetchFailure } from '../transfer/failure-reason'
import { NotReadyError, RestartFromZeroError, type FetchSource, type ReadRequest, type ReadResult } from './source'

/** Statuses worth asking again for: the server or a proxy in front of it is unwell. */
function isTransientStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429
}

/** `bytes 100-199/1000` → its parts; undefined for anything else (`*` totals included). */
function parseContentRange(header: string | undefined): { first: number; last: number; total: number } | undefined {
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(header?.trim() ?? '')
  if (!m) return undefined
  return { first: Number(m[1]), last: Number(m[2]), total: Number(m[3]) }
}

/**
 * Build output served by any static HTTP(S) server (nginx, S3 website, a CDN). Needs no
 * directory listing: the job asks for metadata.json first and for the files it names.
 * Resumes with `Range: bytes=<start>-`; redirects are not followed (a build root should
 * be a stable URL, and following them would step around the allow-list). Messages name the
 * URL asked for and the status code, never what the server sent (status text, Location,
 * Content-Range): a fetch must not become a way to read what the node can reach.
 *
 * A query on the root (a SAS token, a CDN token: credentials for everything under a path)
 * is sent with every file's request; messages and logs show it as `?[redacted]`, and a
 * user name and password in the root likewise (common/redact.ts).
 */
export interface HttpSourceOptions {
  /** Sent with every request (a peer's bearer token); never shown in messages. */
  readonly headers?: Readonly<Record<string, string>>
  /** A 409 is a peer's "not ready yet" (NotReadyError) rather than a refusal. */
  readonly notReadyOn409?: boolean
  /** HTTPS: a CA trusted instead of the system's, and the name the certificate must carry. */
  readonly tls?: { readonly ca?: string | Buffer; readonly servername?: string }
}

export class HttpSource implements FetchSource {
  private readonly base: URL
  private readonly agent: http.Agent
  private readonly extraHeaders: Readonly<Record<string, string>>
  private readonly notReadyOn409: boolean

  constructor(root: string | URL, opts: HttpSourceOptions = {}) {
    this.extraHeaders = opts.headers ?? {}
    this.notReadyOn409 = opts.notReadyOn409 === true
    const url = new URL(root.toString())
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RangeError(`not an http(s) URL: ${url.protocol}`)
    // A trailing slash makes relative names resolve under the root, not beside it.
    if (!url.pathname.endsWith('/')) url.pathname += '/'
    this.base = url
    // Keep-alive: a fetch asks for many files from one host, one TLS handshake each is waste.
    const agentOptions = {
      keepAlive: true,
      maxSockets: 64,
      ...(opts.tls?.ca === undefined ? {} : { ca: opts.tls.ca }),
      ...(opts.tls?.servername === undefined ? {} : { servername: opts.tls.servername }),
    }
    this.agent = url.protocol === 'https:' ? new https.Agent(agentOptions) : new http.Agent(agentOptions)
  }

  describe(name?: string): string {
    return redactCredentials((name === undefined ? this.base : this.urlOf(name)).toString())
  }

  close(): void {
    this.agent.destroy()
  }

  private urlOf(name: string): URL {
    const url = new URL(name.split('/').map(encodeURIComponent).join('/'), this.base)
    url.search = this.base.search
    return url
  }

  read(name: string, req: ReadRequest): Promise<ReadResult> {
    return this.readUrl(this.urlOf(name), this.describe(name), req)
  }

  /** GET of any URL of this source's protocol (a URL index's file URLs), shown in messages as `shown`. */
  readUrl(url: URL, shown: string, req: ReadRequest): Promise<ReadResult> {
    const get = url.protocol === 'https:' ? https.get : http.get
    const headers: http.OutgoingHttpHeaders = { ...this.extraHeaders, 'accept-encoding': 'identity' }
    if (req.start > 0) headers['range'] = `bytes=${req.start}-`
    return new Promise<ReadResult>((resolve, reject) => {
      req.signal.throwIfAborted()
      const request = get(url, { agent: this.agent, headers, signal: req.signal }, (res) => {
        const status = res.statusCode ?? 0
        const fail = (err: Error): void => {
          res.destroy()
          reject(err)
        }
        if (status === 200) {
          const length = Number(res.headers['content-length'])
          // 200 to a Range request: the server ignores ranges, the body starts at byte 0.
          resolve({ stream: res, start: 0, ...(Number.isSafeInteger(length) ? { size: length } : {}) })
        } else if (status === 206 && req.start > 0) {
          const range = parseContentRange(res.headers['content-range'])
          if (range === undefined || range.first !== req.start || range.last !== range.total - 1) {
            fail(new RestartFromZeroError(`${shown}: asked for bytes ${req.start}-, got another or no Content-Range`))
          } else {
            resolve({ stream: res, start: req.start, size: range.total })
          }
        } else if (status === 416) {
          // Our partial file is longer than the server's: it changed under us.
          fail(new RestartFromZeroError(`${shown}: range ${req.start}- not satisfiable`))
        } else if (status === 409 && this.notReadyOn409) {
          fail(new NotReadyError(`${shown}: not ready yet (HTTP 409)`))
        } else if (status === 404 || status === 410) {
          fail(new StoreError('RO_FETCH_FAILED', `${shown}: not found (HTTP ${status})`))
        } else if (status >= 300 && status < 400) {
          fail(new StoreError('RO_FETCH_FAILED', `${shown}: HTTP ${status}, a redirect (not followed)`))
        } else if (isTransientStatus(status)) {
          fail(new FetchFailure(`${shown}: HTTP ${status}`))
        } else {
          fail(new StoreError('RO_FETCH_FAILED', `${shown}: HTTP ${status}`))
        }
      })
      request.on('error', reject)
    })
  }
}
