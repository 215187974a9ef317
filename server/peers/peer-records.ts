import type { ClusterNode, NodeTls } from '../../cluster/cluster'
import { errorMessage, StoreError } from '../../common/errors'
import { isSafeName } from '../../formats/store/layout/layout'
import { parsePushRecord, type PushRecord } from '../../swapper/disk/push-record'
import { peerRequest } from './peer-call'

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
export async function askPeer(node: ClusterNode, adminToken: string | undefined, timeoutMs: number, tls?: NodeTls): Promise<PeerRecords> {
  const where = `node ${node.id} (${node.host}:${node.port})`
  const { status, bytes } = await peerRequest(node, {
    ...(adminToken === undefined ? {} : { token: adminToken }),
    ...(tls === undefined ? {} : { tls }),
    timeoutMs,
    method: 'GET',
    path: '/admin/push-records',
    maxBytes: MAX_ANSWER_BYTES,
  })
  if (status !== 200) throw new StoreError('RO_UNAVAILABLE', `${where} answered ${status}`)
  try {
    return parseAnswer(node.id, JSON.parse(bytes.toString('utf8')))
  } catch (err) {
    throw new StoreError('RO_UNAVAILABLE', `${where}: not a push records answer: ${errorMessage(err)}`)
  }
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
