import type { Cluster, NodeTls } from '../../cluster/cluster'
import { StoreError, errorMessage } from '../../common/errors'
import { RespErrorReply, type RespValue } from '../../formats/wire/resp'
import { RespWriter } from '../../formats/wire/resp-writer'
import { PeerPool } from './peer-pool'
import type { RespStats } from './resp-stats'

/** The node-to-node read: `ROSTORE.GETS <store> <key>...` → `[version, value-or-null...]`. */
export const GETS_COMMAND = 'ROSTORE.GETS'

/** Keys per forwarded command: well under the receiving node's argument limit. */
export const FORWARD_BATCH = 1000

export interface ForwardResult {
  readonly values: (Buffer | undefined)[]
  readonly version: number
}

/** A forwarded read's answer and the node that gave it. */
export interface ForwardAnswer extends ForwardResult {
  readonly node: number
}

export type ForwardCallback = (err: StoreError | undefined, result: ForwardAnswer | undefined) => void

export interface ForwarderOptions {
  readonly cluster: Cluster
  readonly nodeId: number
  readonly readToken?: string
  /** Forwards go over TLS, checking the other nodes' certificates with this (nodes that serve TLS). */
  readonly peerTls?: NodeTls
  readonly timeoutMs: number
  readonly connections: number
  readonly retryMs: number
  readonly stats: RespStats
}

/** The ROSTORE.GETS command for `keys` of `store`, encoded once and sent to each replica tried. */
export function getsCommand(store: string, keys: readonly Uint8Array[]): Buffer {
  let size = 64 + store.length
  for (const k of keys) size += k.length + 16
  const w = new RespWriter(size)
  w.array(keys.length + 2)
  w.bulkText(GETS_COMMAND)
  w.bulkText(store)
  for (const k of keys) w.bulk(k)
  return w.take()
}

/**
 * Server-side routing: asks the replicas of some keys, in order (master first), for their
 * values. The next replica is asked when one cannot be reached, times out, answers an
 * error (stale, no live version, no such store) or serves an older version than this
 * node's (it missed a push); when every replica that answered is older, the newest of
 * their answers is used, as the routing client does. ROSTORE.GETS is answered from the
 * receiving node's own files and never forwarded again, so a forwarded read cannot loop.
 */
export class Forwarder {
  private readonly pools = new Map<number, PeerPool>()

  constructor(private readonly o: ForwarderOptions) {}

  fetch(command: Buffer, keyCount: number, targets: readonly number[], minVersion: number, cb: ForwardCallback): void {
    this.o.stats.forwardedKeys += keyCount
    this.attempt(command, keyCount, targets, 0, minVersion, undefined, [], cb)
  }

  close(): void {
    for (const p of this.pools.values()) p.close()
    this.pools.clear()
  }

  private attempt(
    command: Buffer,
    keyCount: number,
    targets: readonly number[],
    i: number,
    minVersion: number,
    older: ForwardAnswer | undefined,
    failures: string[],
    cb: ForwardCallback,
  ): void {
    if (i >= targets.length) {
      if (older) cb(undefined, older)
      else cb(new StoreError('RO_UNAVAILABLE', `no replica answered (${failures.join('; ') || 'no other replica'})`), undefined)
      return
    }
    const node = targets[i] as number
    const next = (why: string, answer?: ForwardAnswer): void => {
      this.o.stats.forwardFailures++
      failures.push(`node ${node}: ${why}`)
      const keep = answer && (!older || answer.version > older.version) ? answer : older
      this.attempt(command, keyCount, targets, i + 1, minVersion, keep, failures, cb)
    }
    const pool = this.pool(node)
    if (!pool) {
      next('no respPort in cluster.json')
      return
    }
    pool.send(command, (err, reply) => {
      if (err) {
        next(errorMessage(err))
        return
      }
      const decoded = decodeGets(reply as RespValue, keyCount)
      if (typeof decoded === 'string') {
        next(decoded)
        return
      }
      const r: ForwardAnswer = { ...decoded, node }
      if (r.version < minVersion) {
        next(`serves version ${r.version}, older than ${minVersion}`, r)
        return
      }
      cb(undefined, r)
    })
  }

  private pool(node: number): PeerPool | undefined {
    const have = this.pools.get(node)
    if (have) return have
    // Not cached when unknown: the node may learn the address later (POST /admin/cluster/nodes).
    const n = this.o.cluster.nodes.find((x) => x.id === node)
    if (n?.respPort === undefined) return undefined
    const pool = new PeerPool(node, {
      host: n.host,
      port: n.respPort,
      readToken: this.o.readToken,
      tls: this.o.peerTls ?? n.tls,
      timeoutMs: this.o.timeoutMs,
      connections: this.o.connections,
      retryMs: this.o.retryMs,
    })
    this.pools.set(node, pool)
    return pool
  }
}

/** The reply of ROSTORE.GETS, or why it is not one. */
export function decodeGets(reply: RespValue, keyCount: number): ForwardResult | string {
  if (reply instanceof RespErrorReply) return reply.message.slice(0, 300)
  if (!Array.isArray(reply) || reply.length !== keyCount + 1 || typeof reply[0] !== 'number') {
    return `unexpected reply to ${GETS_COMMAND}`
  }
  const values: (Buffer | undefined)[] = new Array<Buffer | undefined>(keyCount)
  for (let i = 0; i < keyCount; i++) {
    const v = reply[i + 1]
    if (v === null) values[i] = undefined
    else if (Buffer.isBuffer(v)) values[i] = v
    else return `unexpected value in the reply to ${GETS_COMMAND}`
  }
  return { values, version: reply[0] }
}
