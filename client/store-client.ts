import { StoreError, errorMessage, isStoreError, type ErrorCode } from '../common/errors'
import type { Cluster } from '../cluster/cluster'
import { buildRing, routeHash, type Ring } from '../cluster/routing'
import { createKeyHasher, keyBytes, type KeyHasher } from '../formats/store/key-hash'
import { NodeClient, type NodeReads, type RemoteStoreInfo } from './node-client'
import { RespNodeClient } from './resp-node-client'

export interface StoreClientOptions {
  readonly cluster: Cluster
  readonly store: string
  /** Per request; default 2000 ms. */
  readonly timeoutMs?: number
  /** Keys per multi-get request; default 1000. */
  readonly batchSize?: number
  /**
   * How keys are read: 'http' (default; multi-get framing) or 'resp' (the nodes' RESP
   * ports, one pipelined connection per node; every node needs a respPort in
   * cluster.json). The store's description is read over HTTP either way.
   */
  readonly transport?: 'http' | 'resp'
  /** The read token, when the nodes require one. */
  readonly readToken?: string
  /**
   * Called each time a replica's answer is not used and the next replica is asked: the
   * node was unreachable, failing, stale, or answered that its copy is damaged. For an
   * application's own metrics; `stats()` counts the same events.
   */
  readonly onFailover?: (event: FailoverEvent) => void
}

export interface FailoverEvent {
  readonly nodeId: number
  /** RO_UNAVAILABLE (unreachable, 5xx, stale) or a corruption code (damaged files on that node). */
  readonly code: ErrorCode
  readonly message: string
}

/** What the client has counted since it connected. */
export interface StoreClientStats {
  /** Replica answers not used: the next replica was asked instead. */
  readonly failovers: number
  /** Of those, answers saying the node's copy is damaged (RO_CORRUPT, RO_CHECKSUM_MISMATCH, RO_BAD_FORMAT). */
  readonly corruptAnswers: number
  /** Corrupt answers per node id. */
  readonly corruptByNode: Readonly<Record<number, number>>
}

/**
 * The routing client. It learns the store's replication, layout, key hash and
 * serializers from the nodes, computes each key's replica list with the builder's routing
 * function, asks the master first and fails over to the next replica on connection
 * errors, timeouts, 5xx, stale stores (503) and a replica's damaged files (422
 * RO_CORRUPT, RO_CHECKSUM_MISMATCH, RO_BAD_FORMAT: the other replicas hold their own
 * copy). Failovers are counted (`stats()`, `onFailover`). Absent keys are `undefined`.
 *
 * It also refuses answers from a version older than the newest it has seen: a node that
 * was down during a high-availability push comes back serving the previous version
 * without knowing it is stale, and its replicas answer instead.
 */
export class StoreClient {
  private newest: number
  private failovers = 0
  private corruptAnswers = 0
  private readonly corruptByNode: Record<number, number> = {}

  private constructor(
    readonly store: string,
    readonly info: RemoteStoreInfo,
    private readonly nodes: ReadonlyMap<number, NodeReads>,
    private readonly ring: Ring,
    private readonly hasher: KeyHasher,
    private readonly batchSize: number,
    private readonly onFailover: ((e: FailoverEvent) => void) | undefined,
  ) {
    this.newest = info.version
  }

  stats(): StoreClientStats {
    return { failovers: this.failovers, corruptAnswers: this.corruptAnswers, corruptByNode: { ...this.corruptByNode } }
  }

  /** Counts a replica's failure that sends the request to the next one; rethrows any other error. */
  private failedOver(nodeId: number, err: unknown): string {
    if (!isFailover(err)) throw err
    this.failovers++
    if (CORRUPTION_CODES.includes(err.code)) {
      this.corruptAnswers++
      this.corruptByNode[nodeId] = (this.corruptByNode[nodeId] ?? 0) + 1
    }
    this.onFailover?.({ nodeId, code: err.code, message: err.message })
    return `${errorMessage(err)} [${err.code}]`
  }

  /** The newest store version seen; answers from older versions are not used. */
  get version(): number {
    return this.newest
  }

  static async connect(opts: StoreClientOptions): Promise<StoreClient> {
    const timeoutMs = opts.timeoutMs ?? 2000
    const readToken = opts.readToken
    const http = new Map(opts.cluster.nodes.map((n) => [n.id, new NodeClient(n, { timeoutMs, readToken })]))
    const answers = await Promise.allSettled([...http.values()].map((c) => c.storeInfo(opts.store)))
    const infos = answers.flatMap((a) => (a.status === 'fulfilled' && !a.value.stale ? [a.value] : []))
    const newest = infos.sort((a, b) => b.version - a.version)[0]
    const fail = (err: StoreError): never => {
      for (const c of http.values()) c.close()
      throw err
    }
    if (!newest && answers.every((a) => a.status === 'rejected' && isStoreError(a.reason, 'RO_UNAUTHORIZED'))) {
      fail(new StoreError('RO_UNAUTHORIZED', `no node would describe store ${opts.store}: missing or wrong read token`))
    }
    if (!newest) {
      const why = answers.map((a) => (a.status === 'rejected' ? errorMessage(a.reason) : 'stale'))
      return fail(new StoreError('RO_UNAVAILABLE', `no node could describe store ${opts.store}: ${why.join('; ')}`))
    }
    for (const n of newest.layout) {
      if (!http.has(n.id))
        fail(new StoreError('RO_BAD_CLUSTER', `store ${opts.store} was built for node ${n.id}, which cluster.json does not list`))
    }
    let nodes: Map<number, NodeReads> = http
    if (opts.transport === 'resp') {
      const missing = opts.cluster.nodes.filter((n) => n.respPort === undefined).map((n) => n.id)
      if (missing.length > 0)
        fail(new StoreError('RO_BAD_CLUSTER', `the RESP transport needs a respPort in cluster.json for node(s) ${missing.join(', ')}`))
      for (const c of http.values()) c.close()
      nodes = new Map(opts.cluster.nodes.map((n) => [n.id, new RespNodeClient(n, { timeoutMs, readToken })]))
    }
    return new StoreClient(
      opts.store,
      newest,
      nodes,
      buildRing(newest.layout),
      await createKeyHasher(newest.keyHash),
      opts.batchSize ?? 1000,
      opts.onFailover,
    )
  }

  /** Replica node ids of a key, master first. */
  replicasOf(key: Uint8Array | string): number[] {
    return routeHash(this.ring, this.hasher.hash(keyBytes(key)), this.info.replication)
  }

  async get(key: Uint8Array | string): Promise<Buffer | undefined> {
    const failures: string[] = []
    let older: { value: Buffer | undefined; version: number } | undefined
    for (const id of this.replicasOf(key)) {
      try {
        const r = await this.nodes.get(id)!.get(this.store, key)
        if (r.version >= this.newest) {
          this.newest = r.version
          return r.value
        }
        if (!older || r.version > older.version) older = r
      } catch (err) {
        failures.push(this.failedOver(id, err))
      }
    }
    if (older) return this.settleOlder(older.version, older.value)
    throw new StoreError('RO_UNAVAILABLE', `no replica answered for the key: ${failures.join('; ')}`)
  }

  /** Values in the order of `keys`; keys are batched into one multi-get per node. */
  async getMany(keys: readonly (Uint8Array | string)[]): Promise<(Buffer | undefined)[]> {
    const out = new Array<Buffer | undefined>(keys.length)
    const older = new Map<number, { value: Buffer | undefined; version: number }>()
    const replicas = keys.map((k) => this.replicasOf(k))
    let pending = keys.map((_, i) => i)
    const failures: string[] = []
    for (let attempt = 0; pending.length > 0 && attempt < this.info.replication; attempt++) {
      const byNode = new Map<number, number[]>()
      for (const i of pending) {
        const node = replicas[i]![attempt]!
        const list = byNode.get(node) ?? []
        list.push(i)
        byNode.set(node, list)
      }
      const retry: number[] = []
      await Promise.all(
        [...byNode].flatMap(([node, idxs]) =>
          batches(idxs, this.batchSize).map(async (batch) => {
            try {
              const r = await this.nodes.get(node)!.getMany(
                this.store,
                batch.map((i) => keys[i]!),
              )
              if (r.version >= this.newest) {
                this.newest = r.version
                batch.forEach((i, j) => (out[i] = r.values[j]))
                return
              }
              batch.forEach((i, j) => {
                if ((older.get(i)?.version ?? 0) < r.version) older.set(i, { value: r.values[j], version: r.version })
              })
            } catch (err) {
              failures.push(this.failedOver(node, err))
            }
            retry.push(...batch)
          }),
        ),
      )
      pending = retry
    }
    const unanswered = pending.filter((i) => !older.has(i))
    if (unanswered.length > 0)
      throw new StoreError('RO_UNAVAILABLE', `no replica answered for ${unanswered.length} keys: ${failures.join('; ')}`)
    for (const i of pending) {
      const o = older.get(i)!
      out[i] = this.settleOlder(o.version, o.value)
    }
    return out
  }

  /**
   * Every replica that answered serves an older version than the newest seen: the
   * cluster was rolled back (or the newer replicas are down). Take the newest answer and
   * lower the bar to it.
   */
  private settleOlder(version: number, value: Buffer | undefined): Buffer | undefined {
    this.newest = version
    return value
  }

  /** A value as the store's value serializer says: text, parsed JSON, or base64 of bytes. */
  decode(value: Buffer): unknown {
    switch (this.info.valueSerializer) {
      case 'string':
        return value.toString('utf8')
      case 'json':
        return JSON.parse(value.toString('utf8'))
      case 'bytes':
        return value.toString('base64')
      case 'mixed': {
        const text = value.toString('utf8')
        try {
          return JSON.parse(text)
        } catch {
          return text
        }
      }
    }
  }

  close(): void {
    for (const c of this.nodes.values()) c.close()
  }
}

/** Answers of a node whose own files are damaged: another replica holds its own copy. */
const CORRUPTION_CODES: readonly ErrorCode[] = ['RO_CORRUPT', 'RO_CHECKSUM_MISMATCH', 'RO_BAD_FORMAT']

/** Errors another replica may not have: the node is unreachable, failing, stale, or its copy is damaged. */
function isFailover(err: unknown): err is StoreError {
  return isStoreError(err) && (err.code === 'RO_UNAVAILABLE' || err.code === 'RO_NOT_SERVING' || CORRUPTION_CODES.includes(err.code))
}

function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
