import { request } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { ClusterNode, NodeTls } from '../../cluster/cluster'
import { StoreError } from '../../common/errors'

const MAX_ANSWER_BYTES = 1 << 20

/**
 * One admin JSON call from this node to a peer (with this node's admin token: the nodes of
 * a cluster share it). Resolves with the status and the parsed body; rejects with
 * RO_UNAVAILABLE when the peer does not answer in `timeoutMs` or answers no JSON.
 */
export function peerJson(
  node: ClusterNode,
  o: { adminToken?: string; tls?: NodeTls; timeoutMs: number; method: 'GET' | 'POST'; path: string; body?: unknown },
): Promise<{ status: number; body: unknown }> {
  const where = `node ${node.id} (${node.host}:${node.port})`
  const send = o.tls === undefined ? request : httpsRequest
  const payload = o.body === undefined ? undefined : Buffer.from(JSON.stringify(o.body))
  const headers: Record<string, string> = o.adminToken === undefined ? {} : { Authorization: `Bearer ${o.adminToken}` }
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
          if (size > MAX_ANSWER_BYTES) req.destroy(new Error(`answer larger than ${MAX_ANSWER_BYTES} bytes`))
          else parts.push(c)
        })
        res.on('error', reject)
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString('utf8')) as unknown })
          } catch {
            reject(new StoreError('RO_UNAVAILABLE', `${where} answered ${res.statusCode} without JSON`))
          }
        })
      },
    )
    req.setTimeout(o.timeoutMs, () => req.destroy(new Error(`no answer within ${o.timeoutMs} ms`)))
    req.on('error', (err) => reject(new StoreError('RO_UNAVAILABLE', `${where}: ${err.message}`, { cause: err })))
    req.end(payload)
  })
}
