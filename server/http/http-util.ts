import type { IncomingMessage, ServerResponse } from 'node:http'
import { errorMessage, isStoreError, StoreError, type ErrorCode } from '../../common/errors'
import { redactCredentials } from '../../common/redact'
import { BUDGET_FREE_BYTES, type RequestBudget } from './request-budget'

/** Request-target bound: a 65535-byte key percent-encoded is under 200 KiB. */
export const MAX_URL_BYTES = 1 << 20
/** JSON bodies of admin calls. */
export const MAX_JSON_BODY_BYTES = 1 << 20

const HTTP_STATUS: Readonly<Record<ErrorCode, number>> = {
  RO_BAD_INPUT: 400,
  RO_DUPLICATE_KEY: 400,
  RO_BAD_CLUSTER: 400,
  RO_BAD_OPTION: 400,
  RO_BAD_REQUEST: 400,
  RO_BAD_FORMAT: 422,
  RO_CORRUPT: 422,
  RO_CHECKSUM_MISMATCH: 422,
  RO_IO: 500,
  RO_NOT_FOUND: 404,
  RO_CONFLICT: 409,
  RO_FETCH_FAILED: 502,
  RO_NO_SPACE: 507,
  RO_ABORTED: 409,
  RO_UNAUTHORIZED: 401,
  RO_FORBIDDEN: 403,
  RO_TOO_LARGE: 413,
  RO_UNAVAILABLE: 503,
  RO_NOT_SERVING: 421,
  RO_PUSH_FAILED: 502,
  RO_INTERNAL: 500,
  RO_BUSY: 503,
  RO_NOT_READY: 409,
}

export function httpStatusFor(code: ErrorCode): number {
  return HTTP_STATUS[code]
}

/** A StoreError answered with a specific HTTP status (for example 414 for a long key). */
export class HttpStatusError extends StoreError {
  constructor(
    readonly status: number,
    code: ErrorCode,
    message: string,
  ) {
    super(code, message)
  }
}

export function badRequest(message: string): StoreError {
  return new StoreError('RO_BAD_REQUEST', message)
}

const HEX: Readonly<Record<string, number>> = Object.fromEntries([...'0123456789abcdefABCDEF'].map((c) => [c, Number.parseInt(c, 16)]))

/**
 * Percent-decode a URL path segment to raw bytes: `%XX` is one byte whatever it is (keys
 * need not be UTF-8, unlike decodeURIComponent), every other character must be printable
 * ASCII and stands for itself ('+' is a plus, not a space). Throws RO_BAD_REQUEST on a
 * broken escape or a raw non-ASCII character.
 */
export function percentDecodeBytes(text: string): Buffer {
  const out = Buffer.allocUnsafe(text.length)
  let n = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x25) {
      const hi = HEX[text[i + 1] ?? '']
      const lo = HEX[text[i + 2] ?? '']
      if (hi === undefined || lo === undefined) throw badRequest(`bad percent escape at character ${i} of the path`)
      out[n++] = (hi << 4) | lo
      i += 2
    } else if (c >= 0x21 && c <= 0x7e) {
      out[n++] = c
    } else {
      throw badRequest('the path holds a character that is not percent-encoded')
    }
  }
  return out.subarray(0, n)
}

/** A path segment naming a store, version or job, decoded to text (then checked by the caller). */
export function decodeNameSegment(segment: string): string {
  const bytes = percentDecodeBytes(segment)
  const text = bytes.toString('utf8')
  if (!Buffer.from(text, 'utf8').equals(bytes)) throw badRequest('a name in the path is not UTF-8')
  return text
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = `${JSON.stringify(body)}\n`
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    ...headers,
  })
  res.end(text)
}

export interface ErrorBody {
  readonly error: { readonly code: ErrorCode; readonly message: string }
}

/** Status and body for anything thrown while handling a request. */
export function errorResponse(err: unknown): { status: number; body: ErrorBody } {
  // A message may quote a source the request named: its credentials are not sent back.
  if (err instanceof HttpStatusError)
    return { status: err.status, body: { error: { code: err.code, message: redactCredentials(err.message) } } }
  if (isStoreError(err))
    return { status: httpStatusFor(err.code), body: { error: { code: err.code, message: redactCredentials(err.message) } } }
  return { status: 500, body: { error: { code: 'RO_INTERNAL', message: redactCredentials(errorMessage(err)) } } }
}

/**
 * What a public (non-admin) route may say about a failure. Codes that describe the
 * request itself (a bad name, an absent store, a body too large) keep their message: it is
 * built from what the client sent. Every other code gets a fixed message, because the
 * errors behind them come from the swapper, the reader or the file system and name data
 * directory paths, file names or internals; those go to the node's log (request-failed)
 * and to admin routes only.
 */
export function publicErrorResponse(err: unknown): { status: number; body: ErrorBody } {
  const r = errorResponse(err)
  const code = r.body.error.code
  if (REQUEST_CODES.has(code)) return r
  return { status: r.status, body: { error: { code, message: PUBLIC_MESSAGES[code] ?? 'the node could not answer' } } }
}

/** Codes whose messages are about the request, not the node. */
const REQUEST_CODES: ReadonlySet<string> = new Set([
  'RO_BAD_REQUEST',
  'RO_NOT_FOUND',
  'RO_NOT_SERVING',
  'RO_TOO_LARGE',
  'RO_UNAUTHORIZED',
  'RO_FORBIDDEN',
  'RO_NOT_READY',
])

const PUBLIC_MESSAGES: Readonly<Record<string, string>> = {
  RO_UNAVAILABLE: 'the store cannot be read on this node now (stale, no live version, or shutting down); ask another replica',
  RO_BUSY: "the node's buffers for request bodies are full; try again later or ask another replica",
  RO_CORRUPT: "the store's files on this node failed a check; ask another replica",
  RO_CHECKSUM_MISMATCH: "the store's files on this node failed a check; ask another replica",
  RO_BAD_FORMAT: "the store's files on this node are of an unknown format; ask another replica",
  RO_IO: 'a storage error on this node',
  RO_INTERNAL: 'an internal error on this node',
  RO_CONFLICT: 'the request conflicts with the state of this node',
}

/** Where a body's bytes are charged: the serving process's budget, until `res` closes. */
export interface BodyHold {
  readonly budget: RequestBudget
  readonly res: ServerResponse
  /** Counts a body refused for a spent budget. */
  readonly onBusy?: () => void
}

/**
 * Read a request body of at most `limit` bytes; RO_TOO_LARGE beyond (checked against
 * Content-Length first, so an oversized upload is refused before it is read). With `hold`,
 * a body over 64 KiB takes its bytes from the budget (a declared length at once, a chunked
 * body as it arrives) and gives them back when the response closes; RO_BUSY (503) when the
 * budget cannot take them. Smaller bodies, most multi-gets, are not charged: they are
 * bounded by the connections a process takes, and are served while the budget is spent.
 */
export function readBody(req: IncomingMessage, limit: number, hold?: BodyHold): Promise<Buffer> {
  const declared = req.headers['content-length']
  if (declared !== undefined && Number(declared) > limit) {
    return Promise.reject(new StoreError('RO_TOO_LARGE', `the body has ${declared} bytes, more than the limit of ${limit}`))
  }
  let charged = 0
  const busy = (): StoreError => {
    hold?.onBusy?.()
    return new StoreError('RO_BUSY', "the node's buffers for request bodies are full; try again later")
  }
  if (hold && declared !== undefined && Number(declared) > BUDGET_FREE_BYTES) {
    const n = Number(declared)
    if (!hold.budget.take(n)) return Promise.reject(busy())
    charged = n
  }
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = []
    let size = 0
    let done = false
    const finish = (err: Error | undefined, body?: Buffer): void => {
      if (done) return
      done = true
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('close', onClose)
      if (hold && charged > 0) {
        const n = charged
        if (err) hold.budget.give(n)
        else if (hold.res.closed) hold.budget.give(n)
        else hold.res.once('close', () => hold.budget.give(n))
      }
      if (err) reject(err)
      else resolve(body as Buffer)
    }
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > limit) {
        req.pause()
        finish(new StoreError('RO_TOO_LARGE', `the body is larger than the limit of ${limit} bytes`))
        return
      }
      if (hold && size > charged && size > BUDGET_FREE_BYTES) {
        // A chunked body (no declared length) is charged as it arrives.
        if (!hold.budget.take(size - charged)) {
          req.pause()
          finish(busy())
          return
        }
        charged = size
      }
      parts.push(chunk)
    }
    const onEnd = (): void => finish(undefined, parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size))
    const onError = (err: Error): void => finish(new StoreError('RO_BAD_REQUEST', `the body could not be read: ${err.message}`))
    const onClose = (): void => {
      if (!req.complete) finish(new StoreError('RO_BAD_REQUEST', 'the client went away before sending the whole body'))
    }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
    req.on('close', onClose)
  })
}

/** A JSON object body (empty body = {}); RO_BAD_REQUEST when not an object. */
export async function readJsonObject(req: IncomingMessage, limit = MAX_JSON_BODY_BYTES): Promise<Record<string, unknown>> {
  const body = await readBody(req, limit)
  if (body.length === 0) return {}
  let json: unknown
  try {
    json = JSON.parse(body.toString('utf8'))
  } catch (err) {
    throw badRequest(`the body is not JSON: ${errorMessage(err)}`)
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw badRequest('the body must be a JSON object')
  return json as Record<string, unknown>
}

/**
 * The query string of a request's target; with `allowed`, a parameter the route does not
 * know is RO_BAD_REQUEST (as onlyFields does for bodies).
 */
export function queryOf(req: IncomingMessage, allowed?: readonly string[]): URLSearchParams {
  const url = req.url ?? '/'
  const q = url.indexOf('?')
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1))
  if (allowed !== undefined)
    for (const name of params.keys()) if (!allowed.includes(name)) throw badRequest(`unknown parameter ${name.slice(0, 64)}`)
  return params
}

/** Refuse fields a route does not know (catches typos such as "verison"). */
export function onlyFields(body: Record<string, unknown>, allowed: readonly string[]): void {
  for (const k of Object.keys(body)) {
    if (!allowed.includes(k)) throw badRequest(`unknown field ${JSON.stringify(k)}; allowed: ${allowed.join(', ') || 'none'}`)
  }
}
