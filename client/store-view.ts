import { StoreError, errorMessage, isStoreError } from '../common/errors'
import type { Cluster, ClusterNode } from '../cluster/cluster'
import { buildRing, routeHash, type Ring } from '../cluster/routing'
import { createKeyHasher, keyBytes, type KeyHasher } from '../formats/store/layout/key-hash'
import { NodeClient, type RemoteStoreInfo } from './node-client'

/**
 * One live version of a store as a client routes it: the version's own layout (from the
 * nodes, not from the client's cluster file), replication and key hash.
 */
export interface StoreView {
  readonly version: number
  readonly info: RemoteStoreInfo
  readonly ring: Ring
  readonly hasher: KeyHasher
}

/** Replica node ids of a key in a view, master first. */
export function replicasIn(view: StoreView, key: Uint8Array | string): number[] {
  return routeHash(view.ring, view.hasher.hash(keyBytes(key)), view.info.replication)
}

/**
 * Where the nodes listen: the bootstrap file's nodes, and every other node a store
 * description named (`nodes` of GET /stores/<s>: the answering node's cluster file lists the nodes of
 * the layouts it serves). The file is only a bootstrap list: a client given an older file
 * finds the nodes that joined since.
 */
export class NodeBook {
  private readonly byId = new Map<number, ClusterNode>()
  /** TLS settings of the bootstrap file, applied to nodes learned from the cluster. */
  private readonly tls: ClusterNode['tls']

  constructor(bootstrap: Cluster) {
    for (const n of bootstrap.nodes) this.byId.set(n.id, n)
    this.tls = bootstrap.nodes.find((n) => n.tls !== undefined)?.tls
  }

  get(id: number): ClusterNode | undefined {
    return this.byId.get(id)
  }

  ids(): number[] {
    return [...this.byId.keys()]
  }

  /**
   * Records the addresses a description gives for nodes not known yet. The file's own
   * entries win: a node may listen elsewhere than its cluster file says (a port chosen at
   * start, a proxy), and what the caller was given is what it can reach.
   */
  learn(info: RemoteStoreInfo): void {
    for (const a of info.nodes ?? []) {
      if (this.byId.has(a.id)) continue
      this.byId.set(a.id, {
        id: a.id,
        host: a.host,
        port: a.port,
        ...(a.respPort === undefined ? {} : { respPort: a.respPort }),
        partitions: [],
        ...(this.tls === undefined ? {} : { tls: this.tls }),
      })
    }
  }
}

export interface DiscoverOptions {
  readonly store: string
  readonly timeoutMs: number
  readonly readToken?: string
  /** Key hashers already made, by name (made once per client). */
  readonly hashers: Map<string, KeyHasher>
}

/**
 * Asks every known node to describe the store and builds the view of the newest version
 * that a node serves without a stale mark (a node that left the layout keeps its version
 * marked stale; one behind a push is stale too). After a rollback the newest such version
 * is the older one: routing goes back with the cluster.
 */
export async function discoverView(book: NodeBook, o: DiscoverOptions): Promise<StoreView> {
  const ids = book.ids()
  const clients = ids.map((id) => new NodeClient(book.get(id)!, { timeoutMs: o.timeoutMs, readToken: o.readToken }))
  let answers: PromiseSettledResult<RemoteStoreInfo>[]
  try {
    answers = await Promise.allSettled(clients.map((c) => c.storeInfo(o.store)))
  } finally {
    for (const c of clients) c.close()
  }
  const infos = answers.flatMap((a) => (a.status === 'fulfilled' && !a.value.stale ? [a.value] : []))
  for (const i of infos) book.learn(i)
  const newest = infos.sort((a, b) => b.version - a.version)[0]
  if (!newest && answers.every((a) => a.status === 'rejected' && isStoreError(a.reason, 'RO_UNAUTHORIZED'))) {
    throw new StoreError('RO_UNAUTHORIZED', `no node would describe store ${o.store}: missing or wrong read token`)
  }
  if (!newest) {
    const why = answers.map((a, i) => `node ${ids[i]}: ${a.status === 'rejected' ? errorMessage(a.reason) : 'stale'}`)
    throw new StoreError('RO_UNAVAILABLE', `no node could describe store ${o.store}: ${why.join('; ')}`)
  }
  for (const n of newest.layout) {
    if (!book.get(n.id)) {
      throw new StoreError(
        'RO_BAD_CLUSTER',
        `version ${newest.version} of store ${o.store} is built for node ${n.id}, whose address neither cluster.json nor the nodes give`,
      )
    }
  }
  let hasher = o.hashers.get(newest.keyHash)
  if (!hasher) {
    hasher = await createKeyHasher(newest.keyHash)
    o.hashers.set(newest.keyHash, hasher)
  }
  return { version: newest.version, info: newest, ring: buildRing(newest.layout), hasher }
}
