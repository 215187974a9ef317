/**
 * A thin S3 client: the handful of calls rostore makes (HeadObject, GetObject with a
 * range, ListObjectsV2, PutObject, multipart upload), each one signed request over
 * node:http with a keep-alive agent. Signing is the `aws4` library's (Signature Version 4);
 * this file only builds the requests and reads the answers.
 *
 * Errors: an answer other than success is an `S3Error` with the HTTP status and S3's
 * error code (NoSuchKey, AccessDenied, SignatureDoesNotMatch...), its message naming the
 * s3:// location and never the credentials. Connection errors are Node's own. Nothing
 * here retries: callers decide (retry.ts for inputs and outputs; the fetch job for pushes).
 */
import { createHash } from 'node:crypto'
import http, { type IncomingMessage } from 'node:http'
import https from 'node:https'
import type { S3Config } from './aws-config'
import { S3Error } from './s3-error'
import { formatS3Url, type S3Location } from './s3-url'
import { presignGet, signRequest } from './sign'
import { decodeEntities, element, elements, escapeXml } from './xml'

export interface ObjectInfo {
  readonly key: string
  readonly size: number
  /** Last-Modified in ms since the epoch, when the answer said. */
  readonly mtimeMs?: number
}

export interface GetResult {
  /** The body: bytes [start, end] of the object. */
  readonly stream: IncomingMessage
  readonly start: number
  /** The whole object's size. */
  readonly size: number
}

const EMPTY_SHA256 = createHash('sha256').update('').digest('hex')
/** Error and listing documents are small; a larger body is not an S3 answer. */
const MAX_XML_BYTES = 16 << 20

export class S3Client {
  private readonly agent: http.Agent

  constructor(
    readonly config: S3Config,
    opts: { readonly maxSockets?: number } = {},
  ) {
    const agentOptions = { keepAlive: true, maxSockets: opts.maxSockets ?? 64 }
    this.agent = config.endpoint.protocol === 'https:' ? new https.Agent(agentOptions) : new http.Agent(agentOptions)
  }

  close(): void {
    this.agent.destroy()
  }

  /** Size of an object; undefined when there is no such key (an absent bucket is an error). */
  async head(loc: S3Location, signal?: AbortSignal): Promise<ObjectInfo | undefined> {
    const res = await this.send('HEAD', loc, { signal })
    res.resume()
    if (res.statusCode === 404) {
      // A HEAD answer has no body to say which is missing: the key, or the whole bucket.
      const bucketGone = res.headers['x-amz-error-code'] === 'NoSuchBucket' || (await this.bucketMissing(loc, signal))
      if (!bucketGone) return undefined
      throw S3Error.fromStatus(loc, 404, this.config, 'NoSuchBucket')
    }
    if (res.statusCode !== 200) throw S3Error.fromStatus(loc, res.statusCode ?? 0, this.config, res.headers['x-amz-error-code'])
    const modified = Date.parse(String(res.headers['last-modified'] ?? ''))
    return { key: loc.key, size: contentLength(res, loc), ...(Number.isFinite(modified) ? { mtimeMs: modified } : {}) }
  }

  /**
   * Bytes [start, end] of an object (end inclusive; to the end when absent), as a stream.
   * The caller consumes or destroys it.
   */
  async get(loc: S3Location, opts: { start?: number; end?: number; signal?: AbortSignal } = {}): Promise<GetResult> {
    const start = opts.start ?? 0
    const headers: http.OutgoingHttpHeaders = {}
    if (start > 0 || opts.end !== undefined) headers['range'] = `bytes=${start}-${opts.end ?? ''}`
    const res = await this.send('GET', loc, { headers, signal: opts.signal })
    const status = res.statusCode ?? 0
    if (status === 200) return { stream: res, start: 0, size: contentLength(res, loc) }
    if (status === 206) {
      const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(res.headers['content-range'] ?? ''))
      if (m === null || Number(m[1]) !== start) {
        res.destroy()
        throw new S3Error(`${formatS3Url(loc)}: the answer to a range request names another range`, { status, transient: true })
      }
      return { stream: res, start, size: Number(m[3]) }
    }
    throw await this.failure(loc, res)
  }

  /**
   * Objects whose key starts with `prefix`, in key order, page by page. With a `delimiter`
   * ('/'), only those directly under the prefix ("files" of a "directory").
   */
  async *list(bucket: string, prefix: string, opts: { delimiter?: string; signal?: AbortSignal } = {}): AsyncGenerator<ObjectInfo> {
    let token: string | undefined
    do {
      const query: Record<string, string> = { 'list-type': '2', prefix }
      if (opts.delimiter !== undefined) query['delimiter'] = opts.delimiter
      if (token !== undefined) query['continuation-token'] = token
      const loc = { bucket, key: '' }
      const res = await this.send('GET', loc, { query, signal: opts.signal })
      if (res.statusCode !== 200) throw await this.failure({ bucket, key: prefix }, res)
      const xml = await readText(res, { bucket, key: prefix })
      for (const item of elements(xml, 'Contents')) {
        const key = element(item, 'Key')
        const size = Number(element(item, 'Size'))
        if (key === undefined || !Number.isSafeInteger(size) || size < 0) {
          throw new S3Error(`s3://${bucket}/${prefix}: a listing entry without a key or size`, { status: 200 })
        }
        yield { key, size }
      }
      token = element(xml, 'IsTruncated') === 'true' ? element(xml, 'NextContinuationToken') : undefined
    } while (token !== undefined)
  }

  /** One object in one request, checked by the store against its MD5 and SHA-256. */
  async put(loc: S3Location, body: Buffer, signal?: AbortSignal): Promise<void> {
    const res = await this.send('PUT', loc, { body, signal })
    if (res.statusCode !== 200) throw await this.failure(loc, res)
    res.resume()
  }

  async createMultipartUpload(loc: S3Location, signal?: AbortSignal): Promise<string> {
    const res = await this.send('POST', loc, { query: { uploads: '' }, signal })
    if (res.statusCode !== 200) throw await this.failure(loc, res)
    const id = element(await readText(res, loc), 'UploadId')
    if (id === undefined || id === '') throw new S3Error(`${formatS3Url(loc)}: no UploadId in the answer`, { status: 200 })
    return id
  }

  /** One part (1-based number); resolves with its ETag. The store checks the part's MD5 and SHA-256. */
  async uploadPart(loc: S3Location, uploadId: string, partNumber: number, body: Buffer, signal?: AbortSignal): Promise<string> {
    const res = await this.send('PUT', loc, { query: { partNumber: String(partNumber), uploadId }, body, signal })
    if (res.statusCode !== 200) throw await this.failure(loc, res)
    res.resume()
    const etag = res.headers['etag']
    if (typeof etag !== 'string' || etag === '') throw new S3Error(`${formatS3Url(loc)}: part ${partNumber} has no ETag`, { status: 200 })
    return etag
  }

  async completeMultipartUpload(loc: S3Location, uploadId: string, etags: readonly string[], signal?: AbortSignal): Promise<void> {
    const parts = etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(e)}</ETag></Part>`).join('')
    const body = Buffer.from(`<CompleteMultipartUpload>${parts}</CompleteMultipartUpload>`)
    const res = await this.send('POST', loc, { query: { uploadId }, body, signal })
    if (res.statusCode !== 200) throw await this.failure(loc, res)
    // S3 may answer 200 and put the error in the body, when it fails after it started answering.
    const xml = await readText(res, loc)
    if (xml.includes('<Error>')) throw S3Error.fromBody(loc, 200, xml, this.config)
  }

  /** Deletes an object (S3 answers 204 also when there was none). */
  async delete(loc: S3Location, signal?: AbortSignal): Promise<void> {
    const res = await this.send('DELETE', loc, { signal })
    if (res.statusCode !== 204 && res.statusCode !== 200) throw await this.failure(loc, res)
    res.resume()
  }

  async abortMultipartUpload(loc: S3Location, uploadId: string, signal?: AbortSignal): Promise<void> {
    const res = await this.send('DELETE', loc, { query: { uploadId }, signal })
    res.resume()
  }

  /** Signs and sends one request; resolves with the response, whatever its status. */
  private send(
    method: string,
    loc: S3Location,
    o: { query?: Record<string, string>; headers?: http.OutgoingHttpHeaders; body?: Buffer; signal?: AbortSignal },
  ): Promise<IncomingMessage> {
    const { endpoint } = this.config
    const { host, path } = this.target(loc, o.query)
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) headers[k] = String(v)
    if (o.body !== undefined) {
      headers['content-length'] = String(o.body.length)
      headers['content-md5'] = createHash('md5').update(o.body).digest('base64')
      headers['x-amz-content-sha256'] = createHash('sha256').update(o.body).digest('hex')
    } else {
      headers['x-amz-content-sha256'] = EMPTY_SHA256
    }
    const signed = signRequest({ method, host, path, headers }, this.config)
    const request = endpoint.protocol === 'https:' ? https.request : http.request
    return new Promise<IncomingMessage>((resolve, reject) => {
      o.signal?.throwIfAborted()
      const req = request(
        {
          protocol: endpoint.protocol,
          hostname: endpoint.hostname,
          port: endpoint.port === '' ? undefined : endpoint.port,
          method,
          path: signed.path,
          headers: { ...signed.headers, host },
          agent: this.agent,
          signal: o.signal,
        },
        resolve,
      )
      req.on('error', reject)
      req.end(o.body)
    })
  }

  /** A presigned GET URL of one object, valid for `expiresSeconds` (at most a week). */
  presignedGetUrl(loc: S3Location, expiresSeconds: number): string {
    if (!Number.isSafeInteger(expiresSeconds) || expiresSeconds < 1 || expiresSeconds > 604800)
      throw new RangeError(`a presigned URL lives 1 s to a week, not ${expiresSeconds} s`)
    const { host, path } = this.target(loc, undefined)
    return presignGet({ host, path, protocol: this.config.endpoint.protocol }, this.config, expiresSeconds)
  }

  /** Host and path (with query) of a request for `loc`, path-style or virtual-hosted. */
  private target(loc: S3Location, query: Record<string, string> | undefined): { host: string; path: string } {
    const { endpoint, pathStyle } = this.config
    const host = pathStyle ? endpoint.host : `${loc.bucket}.${endpoint.host}`
    const keyPath = loc.key.split('/').map(encodeRfc3986).join('/')
    let path = pathStyle ? (loc.key === '' ? `/${loc.bucket}` : `/${loc.bucket}/${keyPath}`) : `/${keyPath}`
    if (query !== undefined)
      path += `?${Object.entries(query)
        .map(([k, v]) => `${encodeRfc3986(k)}=${encodeRfc3986(v)}`)
        .join('&')}`
    return { host, path }
  }

  /** The error an unsuccessful answer stands for (its body read, bounded). */
  private async failure(loc: S3Location, res: IncomingMessage): Promise<S3Error> {
    const status = res.statusCode ?? 0
    const xml = await readText(res, loc).catch(() => '')
    return S3Error.fromBody(loc, status, xml, this.config)
  }

  /** Whether a 404 for a key means its bucket is missing (a HEAD answer has no body to say so). */
  private async bucketMissing(loc: S3Location, signal?: AbortSignal): Promise<boolean> {
    const res = await this.send('GET', { bucket: loc.bucket, key: '' }, { query: { 'list-type': '2', 'max-keys': '0' }, signal })
    const xml = await readText(res, loc).catch(() => '')
    return res.statusCode === 404 && decodeEntities(element(xml, 'Code') ?? '') === 'NoSuchBucket'
  }
}

/** RFC 3986 percent-encoding, as Signature Version 4 canonicalises paths and queries. */
export function encodeRfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

function contentLength(res: IncomingMessage, loc: S3Location): number {
  const n = Number(res.headers['content-length'])
  if (!Number.isSafeInteger(n) || n < 0) {
    res.destroy()
    throw new S3Error(`${formatS3Url(loc)}: the answer has no Content-Length`, { status: res.statusCode ?? 0, transient: true })
  }
  return n
}

async function readText(res: IncomingMessage, loc: S3Location): Promise<string> {
  const parts: Buffer[] = []
  let n = 0
  for await (const chunk of res as AsyncIterable<Buffer>) {
    n += chunk.length
    if (n > MAX_XML_BYTES) {
      res.destroy()
      throw new S3Error(`${formatS3Url(loc)}: an answer of more than ${MAX_XML_BYTES} bytes`, { status: res.statusCode ?? 0 })
    }
    parts.push(chunk)
  }
  return Buffer.concat(parts).toString('utf8')
}
