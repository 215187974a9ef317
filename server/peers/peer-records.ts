import { request } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { ClusterNode, NodeTls } from '../../cluster/cluster'
import { errorMessage, StoreError } from '../../common/errors'
import { isSafeName } from '../../formats/store/layout'
import { parsePushRecord, type PushRecord } from '../../swapper/push-record'

/** What one peer keeps: the last push record of each of its stores. */
export interface PeerRecords {
  readonly nodeId: number
  readonly records: ReadonlyMap<string, PushRecord>
}

/** The answer of `GET /admin/push-records` (routes/admin-peers.ts). */
export interface PushRecordsBody {
  readonly node: number
  readonly stores: Record<string, { readonly live: number | null; readonly record: PushRecord | null }>
}

const MAX_ANSWER_BYTES = 4 << 20

/**
 * Asks a peer for its push records (admin route, with this node's admin token: the nodes
 * of a cluster share it, as `rostore push` needs). Rejects when the peer does not answer
 * in `timeoutMs`, refuses the token, or answers something that is not a records list.
 * Store names and records are validated; invalid entries are dropped. With `tls`, over
 * HTTPS (the peers of a node serving TLS serve it too).
 */
export function askPeer(node: ClusterNode, adminToken: string | undefined, timeoutMs: number, tls?: NodeTls): Promise<PeerRecords> {
  const where = `node ${node.id} (${node.host}:${node.port})`
  const send = tls === undefined ? request : httpsRequest
  return new Promise((resolve, reject) => {
    const req = send(
      {
        ...(tls?.ca === undefined ? {} : { ca: tls.ca }),
        ...(tls?.servername === undefined ? {} : { servername: tls.servername }),
        host: node.host,
        port: node.port,
        method: 'GET',
        path: '/admin/push-records',
        agent: false,
        headers: adminToken === undefined ? {} : { Authorization: `Bearer ${adminToken}` },
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
          if (res.statusCode !== 200) return reject(new StoreError('RO_UNAVAILABLE', `${where} answered ${res.statusCode}`))
          try {
            resolve(parseAnswer(node.id, JSON.parse(Buffer.concat(parts).toString('utf8'))))
          } catch (err) {
            reject(new StoreError('RO_UNAVAILABLE', `${where}: not a push records answer: ${errorMessage(err)}`))
          }
        })
      },
    )
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)))
    req.on('error', (err) => reject(new StoreError('RO_UNAVAILABLE', `${where}: ${err.message}`, { cause: err })))
    req.end()
  })
}

function parseAnswer(nodeId: number, body: unknown): PeerRecords {
  const stores = (body as Partial<PushRecordsBody> | null)?.stores
  if (typeof stores !== 'object' || stores === null) throw new Error('no "stores" object')
  const records = new Map<string, PushRecord>()
  for (const [name, entry] of Object.entries(stores)) {
    const raw = (entry as { record?: unknown } | null)?.record
    if (!isSafeName(name) || raw === null || raw === undefined) continue
    try {
      records.set(name, parsePushRecord(raw))
    } catch {
      // One bad entry does not hide the others.
    }
  }
  return { nodeId, records }
}

/** The newest record (highest seq) of each store among the peers' answers. */
export function newestRecords(answers: readonly PeerRecords[]): Map<string, PushRecord> {
  const out = new Map<string, PushRecord>()
  for (const a of answers) {
    for (const [store, r] of a.records) {
      const have = out.get(store)
      if (!have || r.seq > have.seq) out.set(store, r)
    }
  }
  return out
}
