import http, { type Agent } from 'node:http'
import https from 'node:https'
import { StoreError, ERROR_CODES, errorMessage, type ErrorCode } from '../common/errors'
import type { Cluster, NodeTls } from '../cluster/cluster'

/** One HTTP exchange with a node, bounded in time and in response size. */
export interface HttpResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly body: Buffer
}

export interface HttpRequest {
  readonly host: string
  readonly port: number
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  readonly path: string
  readonly body?: Buffer | string
  readonly headers?: Record<string, string>
  readonly timeoutMs: number
  readonly maxResponseBytes?: number
  /** An https.Agent when `tls` is set. */
  readonly agent?: Agent
  /** Speak HTTPS, checking the node's certificate with these settings. */
  readonly tls?: NodeTls
  /**
   * The request may be sent twice with the same effect (reads, job polls, setting a mark):
   * it is then retried, up to twice, when the connection is reset before an answer.
   */
  readonly idempotent?: boolean
}

/** Every node of `cluster` reached over HTTPS with `tls` (the CLI's --tls / --ca-file). */
export function clusterWithTls(cluster: Cluster, tls: NodeTls): Cluster {
  return { ...cluster, nodes: cluster.nodes.map((n) => ({ ...n, tls })) }
}

/** A keep-alive agent for one node: https with its trust settings when it speaks TLS. */
export function nodeAgent(tls: NodeTls | undefined, maxSockets: number): Agent {
  if (tls === undefined) return new http.Agent({ keepAlive: true, maxSockets })
  return new https.Agent({ keepAlive: true, maxSockets, ...tlsRequestOptions(tls) })
}

export function tlsRequestOptions(tls: NodeTls): { ca?: string | Buffer; servername?: string } {
  return { ...(tls.ca === undefined ? {} : { ca: tls.ca }), ...(tls.servername === undefined ? {} : { servername: tls.servername }) }
}

/** A TLS error, with the likely cause when plain HTTP met HTTPS or the other way round. */
function hint(err: NodeJS.ErrnoException, tls: boolean): string {
  if (tls && (err.code === 'EPROTO' || /wrong version number|packet length too long/i.test(err.message)))
    return `${err.message} (does the node serve TLS? drop --tls / --ca-file if not)`
  if (!tls && (err.code === 'ECONNRESET' || err.code === 'HPE_INVALID_CONSTANT' || /socket hang up/.test(err.message)))
    return `${err.message} (if the node serves TLS, give --tls or --ca-file)`
  return err.message
}

/** Connection failures and timeouts: the node did not answer; another replica may. */
export class NodeUnreachableError extends StoreError {
  constructor(
    readonly endpoint: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('RO_UNAVAILABLE', `${endpoint}: ${message}`, options)
  }
}

const DEFAULT_MAX_RESPONSE = 64 << 20
const RESET_RETRIES = 2

/**
 * A connection reset before any answer. On a reused keep-alive connection it is most often
 * the race where the node closed the idle connection just as the request went out (a node
 * whose event loop was busy closes many at once when it catches up): the node never saw
 * the request.
 */
function isReset(err: unknown): boolean {
  const code = (err as { cause?: NodeJS.ErrnoException }).cause?.code
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED' || /socket hang up/.test(errorMessage(err))
}

export async function httpRequest(r: HttpRequest): Promise<HttpResponse> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await exchange(r)
    } catch (err) {
      if (!r.idempotent || attempt >= RESET_RETRIES || !isReset(err)) throw err
      // A fresh connection for the retry; a short pause when it was no keep-alive race.
      if (!(err as ExchangeError).reusedSocket) await new Promise((res) => setTimeout(res, 50 * (attempt + 1)))
    }
  }
}

type ExchangeError = StoreError & { reusedSocket?: boolean }

/** Nothing listens at the node's address: the process is down (not busy, not slow). */
export function isConnectionRefused(err: unknown): boolean {
  return (err as { cause?: NodeJS.ErrnoException } | undefined)?.cause?.code === 'ECONNREFUSED'
}

function exchange(r: HttpRequest): Promise<HttpResponse> {
  const endpoint = `${r.host}:${r.port}`
  const send = r.tls === undefined ? http.request : https.request
  return new Promise((resolve, reject) => {
    const req = send(
      {
        host: r.host,
        port: r.port,
        method: r.method,
        path: r.path,
        agent: r.agent,
        ...(r.tls === undefined ? {} : tlsRequestOptions(r.tls)),
        headers: { ...r.headers, ...(r.body !== undefined ? { 'Content-Length': String(Buffer.byteLength(r.body)) } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (c: Buffer) => {
          size += c.length
          if (size > (r.maxResponseBytes ?? DEFAULT_MAX_RESPONSE)) {
            req.destroy(new NodeUnreachableError(endpoint, `response larger than ${r.maxResponseBytes ?? DEFAULT_MAX_RESPONSE} bytes`))
            return
          }
          chunks.push(c)
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
        res.on('error', (err) => reject(new NodeUnreachableError(endpoint, err.message, { cause: err })))
      },
    )
    req.setTimeout(r.timeoutMs, () => req.destroy(new NodeUnreachableError(endpoint, `no answer within ${r.timeoutMs} ms`)))
    req.on('error', (err) => {
      const e: ExchangeError =
        err instanceof StoreError ? err : new NodeUnreachableError(endpoint, hint(err, r.tls !== undefined), { cause: err })
      e.reusedSocket = req.reusedSocket
      reject(e)
    })
    req.end(r.body)
  })
}

/** The node's JSON error body as a StoreError with the node's code. */
export function errorFromResponse(endpoint: string, res: HttpResponse): StoreError {
  let code: ErrorCode = res.status >= 500 ? 'RO_UNAVAILABLE' : 'RO_BAD_REQUEST'
  let message = `HTTP ${res.status}`
  try {
    const body = JSON.parse(res.body.toString('utf8')) as { error?: { code?: string; message?: string } }
    if (body.error?.code && (ERROR_CODES as readonly string[]).includes(body.error.code)) code = body.error.code as ErrorCode
    if (body.error?.message) message = body.error.message
  } catch {
    // not JSON: keep the status line
  }
  if (res.status === 401) code = 'RO_UNAUTHORIZED'
  // Any 5xx means "this node cannot answer now": callers fail over on RO_UNAVAILABLE. A full
  // disk (507, admin calls only) keeps its code: the operator has something to free.
  if (res.status >= 500 && code !== 'RO_NO_SPACE') code = 'RO_UNAVAILABLE'
  return new StoreError(code, `${endpoint}: ${message}`)
}
