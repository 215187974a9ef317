import { request } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { ClusterNode, NodeTls } from '../../cluster/cluster'
import { StoreError } from '../../common/errors'

export interface PeerCall {
  /** Sent as a bearer token: the nodes of a cluster share their tokens. */
  readonly token?: string
  /** Over HTTPS, with this CA (a node serving TLS asks its peers over TLS). */
  readonly tls?: NodeTls
  readonly timeoutMs: number
  readonly method: 'GET' | 'POST'
  readonly path: string
  readonly body?: unknown
  /** A longer answer is cut and the call rejected; default 1 MiB. */
  readonly maxBytes?: number
}

/** Why a peer call failed: no answer in time, an answer over the size bound, or the connection. */
export class PeerCallError extends StoreError {
  constructor(
    readonly kind: 'timeout' | 'too-large' | 'connection',
    message: string,
    options?: { cause?: unknown },
  ) {
    super('RO_UNAVAILABLE', message, options)
  }
}

/**
 * One HTTP call from this node to a peer, bounded in time and size: the peer check, the
 * push resolver and the console all ask their peers through it. Resolves with the status
 * and the body's bytes; rejects with RO_UNAVAILABLE naming the peer when it does not
 * answer in time, answers too much, or the connection fails.
 */
export function peerRequest(node: ClusterNode, o: PeerCall): Promise<{ status: number; bytes: Buffer }> {
  const where = `node ${node.id} (${node.host}:${node.port})`
  const maxBytes = o.maxBytes ?? 1 << 20
  const send = o.tls === undefined ? request : httpsRequest
  const payload = o.body === undefined ? undefined : Buffer.from(JSON.stringify(o.body))
  const headers: Record<string, string> = o.token === undefined ? {} : { Authorization: `Bearer ${o.token}` }
  if (payload) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': String(payload.length) })
  return new Promise((resolve, reject) => {
    const req = send(
      {
        ...(o.tls?.ca === undefined ? {} : { ca: o.tls.ca }),
        ...(o.tls?.servername === undefined ? {} : { servername: o.tls.servername }),
        host: node.host,
        port: node.port,
        method: o.method,
        path: o.path,
        agent: false,
        headers,
      },
      (res) => {
        const parts: Buffer[] = []
        let size = 0
        res.on('data', (c: Buffer) => {
          size += c.length
          if (size > maxBytes) req.destroy(new PeerCallError('too-large', `${where}: answer larger than ${maxBytes} bytes`))
          else parts.push(c)
        })
        res.on('error', (err) => reject(asPeerError(where, err)))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes: Buffer.concat(parts) }))
      },
    )
    req.setTimeout(o.timeoutMs, () => req.destroy(new PeerCallError('timeout', `${where}: no answer within ${o.timeoutMs} ms`)))
    req.on('error', (err) => reject(asPeerError(where, err)))
    req.end(payload)
  })
}

function asPeerError(where: string, err: Error): PeerCallError {
  return err instanceof PeerCallError ? err : new PeerCallError('connection', `${where}: ${err.message}`, { cause: err })
}

/**
 * One admin JSON call to a peer (with this node's admin token). Resolves with the status
 * and the parsed body; rejects with RO_UNAVAILABLE when the peer does not answer in
 * `timeoutMs` or answers no JSON.
 */
export async function peerJson(
  node: ClusterNode,
  o: { adminToken?: string; tls?: NodeTls; timeoutMs: number; method: 'GET' | 'POST'; path: string; body?: unknown },
): Promise<{ status: number; body: unknown }> {
  const { status, bytes } = await peerRequest(node, { ...o, ...(o.adminToken === undefined ? {} : { token: o.adminToken }) })
  try {
    return { status, body: JSON.parse(bytes.toString('utf8')) as unknown }
  } catch {
    throw new StoreError('RO_UNAVAILABLE', `node ${node.id} (${node.host}:${node.port}) answered ${status} without JSON`)
  }
}
