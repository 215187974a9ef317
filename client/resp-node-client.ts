import { ERROR_CODES, StoreError, type ErrorCode } from '../common/errors'
import type { ClusterNode } from '../cluster/cluster'
import { RespErrorReply, type RespValue } from '../formats/wire/resp'
import { RespWriter } from '../formats/wire/resp-writer'
import type { NodeReads } from './node-client'
import { RespClientConnection } from './resp-connection'

export interface RespNodeClientOptions {
  readonly timeoutMs?: number
  /** The cluster's read token, when the nodes require one. */
  readonly readToken?: string
}

/**
 * Reads from one node over its RESP port with `ROSTORE.GETS <store> <key>...`: the
 * node's own files only (no server-side forwarding: the routing client already picked
 * the replica), and the version that answered, so the client's newest-version rule works
 * as over HTTP. One pipelined connection per node.
 */
export class RespNodeClient implements NodeReads {
  readonly endpoint: string
  private readonly conn: RespClientConnection

  constructor(node: ClusterNode, opts: RespNodeClientOptions = {}) {
    if (node.respPort === undefined) throw new StoreError('RO_BAD_CLUSTER', `node ${node.id} has no respPort in cluster.json`)
    this.endpoint = `node ${node.id} (${node.host}:${node.respPort})`
    this.conn = new RespClientConnection({
      host: node.host,
      port: node.respPort,
      password: opts.readToken,
      timeoutMs: opts.timeoutMs,
      tls: node.tls,
    })
  }

  async get(store: string, key: Uint8Array | string): Promise<{ value: Buffer | undefined; version: number }> {
    const r = await this.getMany(store, [key])
    return { value: r.values[0], version: r.version }
  }

  async getMany(store: string, keys: readonly (Uint8Array | string)[]): Promise<{ values: (Buffer | undefined)[]; version: number }> {
    const w = new RespWriter(64 + keys.reduce((n, k) => n + k.length * 3 + 16, 0))
    w.array(keys.length + 2)
    w.bulkText('ROSTORE.GETS')
    w.bulkText(store)
    for (const k of keys) {
      if (typeof k === 'string') w.bulkText(k)
      else w.bulk(k)
    }
    const reply = await this.conn.send(w.take())
    return this.decode(reply, keys.length)
  }

  close(): void {
    this.conn.close()
  }

  private decode(reply: RespValue, n: number): { values: (Buffer | undefined)[]; version: number } {
    if (reply instanceof RespErrorReply) {
      // The node's RO_ code when it gave one (RO_UNAVAILABLE makes the client fail over).
      const code: ErrorCode = (ERROR_CODES as readonly string[]).includes(reply.code) ? (reply.code as ErrorCode) : 'RO_BAD_REQUEST'
      throw new StoreError(
        reply.code === 'NOAUTH' || reply.code === 'WRONGPASS' ? 'RO_UNAUTHORIZED' : code,
        `${this.endpoint}: ${reply.message}`,
      )
    }
    if (!Array.isArray(reply) || reply.length !== n + 1 || typeof reply[0] !== 'number') {
      throw new StoreError('RO_UNAVAILABLE', `${this.endpoint}: unexpected reply to ROSTORE.GETS`)
    }
    const values = reply.slice(1).map((v) => {
      if (v === null) return undefined
      if (Buffer.isBuffer(v)) return v
      throw new StoreError('RO_UNAVAILABLE', `${this.endpoint}: unexpected value in the reply to ROSTORE.GETS`)
    })
    return { values, version: reply[0] }
  }
}
