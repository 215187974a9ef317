import { StoreError, errorMessage, isStoreError, type ErrorCode } from '../common/errors'
import type { Cluster, ClusterNode } from '../cluster/cluster'
import type { KeyHasher } from '../formats/store/layout/key-hash'
import { NodeClient, type NodeReads, type RemoteStoreInfo } from './node-client'
import { readOneVersion } from '../cluster/one-version-read'
import { RespNodeClient } from './resp-node-client'
import { DecompressingReads, ValueDecoders } from './stored-reads'
import { discoverView, NodeBook, replicasIn, type StoreView } from './store-view'

export interface StoreClientOptions {
  /** Where to start: any node of the cluster will do (the live layout is learned from the nodes). */
  readonly cluster: Cluster
  readonly store: string
  /** Per request; default 2000 ms. */
  readonly timeoutMs?: number
  /** Keys per multi-get request; default 1000. */
  readonly batchSize?: number
  /**
   * How keys are read: 'auto' (default), 'http' (multi-get framing) or 'resp' (the nodes'
   * RESP ports with `ROSTORE.GETS`, one pipelined connection per node; every node needs a
   * respPort in cluster.json). 'auto' is the cheapest the cluster offers: RESP when every
   * node of the store's live layout has a RESP port (as its nodes describe it), else HTTP;
   * a node learned later without one is read over HTTP. The store's description is read
   * over HTTP either way.
   */
  readonly transport?: StoreTransport
  /** The read token, when the nodes require one. */
  readonly readToken?: string
  /**
   * Where values are decompressed: 'node' (default), or 'client': they travel as the
   * version stores them (`?values=stored`) and this client decompresses them, with the
   * version's zstd dictionary fetched once per version and checked against its checksum.
   * A compressed store then moves its compressed bytes and the nodes skip decompression.
   * Reads go over HTTP ('auto' picks it; 'resp' is refused: RESP answers plain values).
   */
  readonly decompress?: 'node' | 'client'
  /**
   * Called each time a replica's answer is not used and the next replica is asked: the
   * node was unreachable, failing, stale, or answered that its copy is damaged. For an
   * application's own metrics; `stats()` counts the same events.
   */
  readonly onFailover?: (event: FailoverEvent) => void
}

/** How a StoreClient reads keys (StoreClientOptions.transport). */
export type StoreTransport = 'auto' | 'http' | 'resp'

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
 * Rounds of a read that no replica could answer: each learns the live layout again from
 * the nodes and waits a little longer (the cluster may be swapping to a new layout).
 */
const ROUNDS = 8
/** A background refresh after an answer from another version: at most once per this many ms. */
const REFRESH_GAP_MS = 50

/**
 * The routing client. It learns the store's live version from the nodes (any node of the
 * cluster file it is given: the file is only a bootstrap list) with that version's own
 * layout, replication, key hash and serializers, and where its nodes listen; it computes
 * each key's replica list with the builder's routing function, asks the master first and
 * fails over to the next replica on connection errors, timeouts, 5xx, stale stores (503),
 * "not serving" (421: a node outside the live layout, or a key it does not hold there) and
 * a replica's damaged files (422 RO_CORRUPT, RO_CHECKSUM_MISMATCH, RO_BAD_FORMAT: the other
 * replicas hold their own copy). Failovers are counted (`stats()`, `onFailover`). Absent
 * keys are `undefined`.
 *
 * It follows the cluster: an answer from another version than the one it routes by, or a
 * read no replica could answer, makes it ask the nodes again and switch to the newest
 * version served without a stale mark (a push to a new layout, a rollback). Every answer
 * comes from one version: a single key from the node that answered, a multi-get from one
 * version for all its keys (read again when a swap split it). Answers from a version older
 * than the routed one are used only when no replica has the routed one.
 */
export class StoreClient {
  private failovers = 0
  private corruptAnswers = 0
  private readonly corruptByNode: Record<number, number> = {}
  /** The version before the last switch: asked when the routed version cannot answer (mid-swap). */
  private previous: StoreView | undefined
  private readonly reads = new Map<number, { readonly node: ClusterNode; readonly reads: NodeReads }>()
  private refreshing: Promise<void> | undefined
  private lastRefresh = 0
  private closed = false

  private constructor(
    readonly store: string,
    private view: StoreView,
    private readonly book: NodeBook,
    private readonly o: {
      readonly timeoutMs: number
      readonly readToken: string | undefined
      readonly transport: 'http' | 'resp'
      /** 'resp' chosen by 'auto': a node without a RESP port is read over HTTP. */
      readonly fallBackToHttp: boolean
      readonly batchSize: number
      readonly onFailover: ((e: FailoverEvent) => void) | undefined
      readonly hashers: Map<string, KeyHasher>
      /** decompress 'client': the decoders of values read as stored. */
      readonly decoders: ValueDecoders | undefined
    },
  ) {}

  stats(): StoreClientStats {
    return { failovers: this.failovers, corruptAnswers: this.corruptAnswers, corruptByNode: { ...this.corruptByNode } }
  }

  /** The description of the version the client routes by. */
  get info(): RemoteStoreInfo {
    return this.view.info
  }

  /** The transport keys are read with ('auto' resolved when the client connected). */
  get transport(): 'http' | 'resp' {
    return this.o.transport
  }

  /** The version the client routes by (the newest served without a stale mark, when last asked). */
  get version(): number {
    return this.view.version
  }

  /** Counts a replica's failure that sends the request to the next one; rethrows any other error. */
  private failedOver(nodeId: number, err: unknown): string {
    if (!isFailover(err)) throw err
    this.failovers++
    if (CORRUPTION_CODES.includes(err.code)) {
      this.corruptAnswers++
      this.corruptByNode[nodeId] = (this.corruptByNode[nodeId] ?? 0) + 1
    }
    this.onFailoverEvent(nodeId, err)
    return `${errorMessage(err)} [${err.code}]`
  }

  private onFailoverEvent(nodeId: number, err: StoreError): void {
    this.o.onFailover?.({ nodeId, code: err.code, message: err.message })
  }

  static async connect(opts: StoreClientOptions): Promise<StoreClient> {
    const timeoutMs = opts.timeoutMs ?? 2000
    const asked = opts.transport ?? 'auto'
    const decompress = opts.decompress ?? 'node'
    if (decompress === 'client' && asked === 'resp')
      throw new StoreError('RO_BAD_OPTION', "decompress 'client' reads over HTTP: RESP answers plain values")
    if (asked === 'resp') {
      const missing = opts.cluster.nodes.filter((n) => n.respPort === undefined).map((n) => n.id)
      if (missing.length > 0)
        throw new StoreError('RO_BAD_CLUSTER', `the RESP transport needs a respPort in cluster.json for node(s) ${missing.join(', ')}`)
    }
    const book = new NodeBook(opts.cluster)
    const hashers = new Map<string, KeyHasher>()
    const view = await discoverView(book, { store: opts.store, timeoutMs, readToken: opts.readToken, hashers })
    const transport = decompress === 'client' ? 'http' : asked === 'auto' ? cheapestTransport(view, book) : asked
    return new StoreClient(opts.store, view, book, {
      timeoutMs,
      readToken: opts.readToken,
      transport,
      fallBackToHttp: asked === 'auto',
      batchSize: opts.batchSize ?? 1000,
      onFailover: opts.onFailover,
      hashers,
      decoders: decompress === 'client' ? new ValueDecoders() : undefined,
    })
  }

  /** Replica node ids of a key in the routed version's layout, master first. */
  replicasOf(key: Uint8Array | string): number[] {
    return replicasIn(this.view, key)
  }

  async get(key: Uint8Array | string): Promise<Buffer | undefined> {
    const failures: string[] = []
    for (let round = 0; round < ROUNDS; round++) {
      for (const view of this.views()) {
        const r = await this.getIn(view, key, failures)
        if (r) {
          this.noteVersion(r.version)
          return r.value
        }
      }
      await this.relearn(round)
    }
    throw new StoreError('RO_UNAVAILABLE', `no replica answered for the key: ${lastFailures(failures)}`)
  }

  /** Values in the order of `keys`, all from one version; keys are batched into one multi-get per node. */
  async getMany(keys: readonly (Uint8Array | string)[]): Promise<(Buffer | undefined)[]> {
    if (keys.length === 0) return []
    const failures: string[] = []
    for (let round = 0; round < ROUNDS; round++) {
      for (const view of this.views()) {
        const r = await this.manyIn(view, keys, failures)
        if (r) {
          this.noteVersion(r.version)
          return r.values
        }
      }
      await this.relearn(round)
    }
    throw new StoreError('RO_UNAVAILABLE', `no version answered for all ${keys.length} keys: ${lastFailures(failures)}`)
  }

  /** The routed version, then the one before the last switch. */
  private views(): StoreView[] {
    return this.previous && this.previous.version !== this.view.version ? [this.view, this.previous] : [this.view]
  }

  /** One key by a view's replicas: an answer of that version (or newer), else the newest older one. */
  private async getIn(
    view: StoreView,
    key: Uint8Array | string,
    failures: string[],
  ): Promise<{ value: Buffer | undefined; version: number } | undefined> {
    let older: { value: Buffer | undefined; version: number } | undefined
    for (const id of replicasIn(view, key)) {
      const node = this.nodeReads(id)
      if (!node) {
        failures.push(`node ${id}: no address for this transport`)
        continue
      }
      try {
        const r = await node.get(this.store, key)
        if (r.version >= view.version) return r
        if (!older || r.version > older.version) older = r
      } catch (err) {
        failures.push(this.failedOver(id, err))
      }
    }
    return older
  }

  /**
   * Every key by a view's replicas, one multi-get per node and batch, failing over per
   * node; answers from several versions (a swap in between, or a cluster left split until
   * its nodes converge) are completed from one version that serves every key. Undefined
   * when a key got no answer or no version serves them all: the caller reads again.
   */
  private async manyIn(
    view: StoreView,
    keys: readonly (Uint8Array | string)[],
    failures: string[],
  ): Promise<{ values: (Buffer | undefined)[]; version: number } | undefined> {
    const out = new Array<Buffer | undefined>(keys.length)
    const versionOf = new Array<number>(keys.length)
    const nodeVersions = new Map<number, number>()
    const replicas = keys.map((k) => replicasIn(view, k))
    let pending = keys.map((_, i) => i)
    for (let attempt = 0; pending.length > 0 && attempt < view.info.replication; attempt++) {
      const byNode = new Map<number, number[]>()
      for (const i of pending) {
        const node = replicas[i]![attempt]!
        const list = byNode.get(node) ?? []
        list.push(i)
        byNode.set(node, list)
      }
      const retry: number[] = []
      await Promise.all(
        [...byNode].map(async ([id, idxs]) => {
          try {
            const r = await this.readBatches(id, keys, idxs)
            nodeVersions.set(id, r.version)
            idxs.forEach((i, j) => {
              out[i] = r.values[j]
              versionOf[i] = r.version
            })
          } catch (err) {
            failures.push(this.failedOver(id, err))
            retry.push(...idxs)
          }
        }),
      )
      pending = retry
    }
    if (pending.length > 0) return undefined
    const versions = new Set(versionOf)
    if (versions.size === 1) return { values: out, version: versionOf[0]! }
    // Answers from several versions: every key again from one version that serves them all.
    const one = await readOneVersion({ replicas, values: out, versionOf, nodeVersions }, (id, idxs) => this.readBatches(id, keys, idxs))
    if (!one) failures.push(`answers from versions ${[...versions].join(', ')} and no version serves every key: read again`)
    return one
  }

  /** The keys `idxs` from one node, in batches; all from one version (a swap in between throws, so the caller asks elsewhere). */
  private async readBatches(
    id: number,
    keys: readonly (Uint8Array | string)[],
    idxs: readonly number[],
  ): Promise<{ version: number; values: (Buffer | undefined)[] }> {
    const node = this.nodeReads(id)
    if (!node) throw new StoreError('RO_UNAVAILABLE', `node ${id}: no address for this transport`)
    const parts = await Promise.all(
      batches(idxs, this.o.batchSize).map((b) =>
        node.getMany(
          this.store,
          b.map((i) => keys[i]!),
        ),
      ),
    )
    const version = parts[0]!.version
    if (parts.some((p) => p.version !== version)) throw new StoreError('RO_UNAVAILABLE', `node ${id} swapped during a multi-get`)
    return { version, values: parts.flatMap((p) => p.values) }
  }

  /** An answer came from another version than the routed one: learn the cluster's again, soon. */
  private noteVersion(version: number): void {
    if (version === this.view.version || this.refreshing || this.closed) return
    if (Date.now() - this.lastRefresh < REFRESH_GAP_MS) return
    void this.refresh()
  }

  /** A read that no replica answered: learn the live version again, then pause a little longer each round. */
  private async relearn(round: number): Promise<void> {
    await this.refresh()
    if (round > 0) await new Promise((r) => setTimeout(r, Math.min(10 * 2 ** round, 500)))
  }

  private refresh(): Promise<void> {
    this.refreshing ??= discoverView(this.book, {
      store: this.store,
      timeoutMs: this.o.timeoutMs,
      readToken: this.o.readToken,
      hashers: this.o.hashers,
    })
      .then(
        (v) => {
          if (v.version === this.view.version) return
          this.previous = this.view
          this.view = v
        },
        // No node could describe the store now: keep routing by what is known.
        () => undefined,
      )
      .finally(() => {
        this.lastRefresh = Date.now()
        this.refreshing = undefined
      })
    return this.refreshing
  }

  /** The reads client of a node, made on first use (addresses, once known, do not change). */
  private nodeReads(id: number): NodeReads | undefined {
    const node = this.book.get(id)
    if (!node) return undefined
    const have = this.reads.get(id)
    if (have) return have.reads
    const resp = this.o.transport === 'resp' && node.respPort !== undefined
    if (this.o.transport === 'resp' && !resp && !this.o.fallBackToHttp) return undefined
    const opts = { timeoutMs: this.o.timeoutMs, readToken: this.o.readToken }
    const decoders = this.o.decoders
    const reads = resp
      ? new RespNodeClient(node, opts)
      : decoders
        ? new DecompressingReads(new NodeClient(node, opts), decoders)
        : new NodeClient(node, opts)
    this.reads.set(id, { node, reads })
    return reads
  }

  /** A value as the store's value serializer says: text, parsed JSON, or base64 of bytes. */
  decode(value: Buffer): unknown {
    switch (this.view.info.valueSerializer) {
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
    this.closed = true
    for (const c of this.reads.values()) c.reads.close()
    this.reads.clear()
  }
}

/**
 * RESP when every node of the view's layout has a RESP port: a GET over RESP costs the
 * node and the client less than one over HTTP (bench/RESULTS.md, sections 3 and 3b).
 */
function cheapestTransport(view: StoreView, book: NodeBook): 'http' | 'resp' {
  return view.info.layout.every((l) => book.get(l.id)?.respPort !== undefined) ? 'resp' : 'http'
}

/** Answers of a node whose own files are damaged: another replica holds its own copy. */
const CORRUPTION_CODES: readonly ErrorCode[] = ['RO_CORRUPT', 'RO_CHECKSUM_MISMATCH', 'RO_BAD_FORMAT']

/** Errors another replica may not have: the node is unreachable, failing, stale, or its copy is damaged. */
function isFailover(err: unknown): err is StoreError {
  return isStoreError(err) && (err.code === 'RO_UNAVAILABLE' || err.code === 'RO_NOT_SERVING' || CORRUPTION_CODES.includes(err.code))
}

function lastFailures(failures: readonly string[]): string {
  return failures.length > 6 ? `${failures.slice(-6).join('; ')} (and ${failures.length - 6} more)` : failures.join('; ')
}

function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
