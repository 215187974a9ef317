import { isIP } from 'node:net'
import { StoreError } from '../common/errors'
import type { Cluster, ClusterNode } from './cluster'

/** Where a node listens: what `POST /admin/cluster/nodes` hands a node, and what it keeps. */
export interface NodeAddress {
  readonly id: number
  readonly host: string
  readonly port: number
  readonly respPort?: number
}

/** Nodes one request (or one `cluster-nodes.json`) may name: far above any real cluster. */
export const MAX_ADDRESSES = 1024
/** The longest DNS name (RFC 1035); IP literals are shorter. */
export const MAX_HOST_LENGTH = 253

const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/

/** A DNS hostname (letters, digits, hyphens; dot-separated labels of at most 63) or an IP literal. */
export function isHostName(host: string): boolean {
  if (host.length === 0 || host.length > MAX_HOST_LENGTH) return false
  if (isIP(host) !== 0) return true
  const name = host.endsWith('.') ? host.slice(0, -1) : host
  return name.length > 0 && name.split('.').every((l) => LABEL.test(l))
}

/**
 * Validates `{"nodes": [{"id", "host", "port", "respPort"?}, ...]}` strictly: unknown
 * fields, duplicate ids or endpoints, bad hosts and ports are refused with RO_BAD_REQUEST,
 * the message naming `where` and the entry.
 */
export function parseNodeAddresses(json: unknown, where: string): NodeAddress[] {
  const fail = (msg: string): never => {
    throw new StoreError('RO_BAD_REQUEST', `${where}: ${msg}`)
  }
  if (!isObject(json)) return fail('must be a JSON object {"nodes": [...]}')
  for (const k of Object.keys(json)) if (k !== 'nodes') fail(`unknown field ${JSON.stringify(k)}; allowed: nodes`)
  const raw = json['nodes']
  if (!Array.isArray(raw)) return fail('"nodes" must be an array')
  if (raw.length > MAX_ADDRESSES) fail(`"nodes" has ${raw.length} entries, more than ${MAX_ADDRESSES}`)
  const out: NodeAddress[] = []
  const ids = new Set<number>()
  const endpoints = new Set<string>()
  for (const [i, n] of (raw as unknown[]).entries()) {
    if (!isObject(n)) return fail(`nodes[${i}] must be an object`)
    for (const k of Object.keys(n)) {
      if (!['id', 'host', 'port', 'respPort'].includes(k))
        fail(`nodes[${i}]: unknown field ${JSON.stringify(k)}; allowed: id, host, port, respPort`)
    }
    const { id, host, port, respPort } = n
    if (!isNonNegativeInt(id)) return fail(`nodes[${i}]: "id" must be a non-negative integer`)
    if (ids.has(id)) fail(`nodes[${i}]: duplicate node id ${id}`)
    ids.add(id)
    if (typeof host !== 'string' || !isHostName(host))
      return fail(`node ${id}: "host" must be a hostname or an IP literal of at most ${MAX_HOST_LENGTH} characters`)
    if (!isPort(port)) return fail(`node ${id}: bad port ${JSON.stringify(port)} (1-65535)`)
    if (respPort !== undefined && !isPort(respPort)) return fail(`node ${id}: bad respPort ${JSON.stringify(respPort)} (1-65535)`)
    for (const p of respPort === undefined ? [port] : [port, respPort]) {
      if (endpoints.has(`${host}:${p}`)) fail(`node ${id}: ${host}:${p} is used by another node or port`)
      endpoints.add(`${host}:${p}`)
    }
    out.push(respPort === undefined ? { id, host, port } : { id, host, port, respPort })
  }
  return out
}

/** The address part of a cluster node. */
export function addressOf(n: NodeAddress): NodeAddress {
  return n.respPort === undefined
    ? { id: n.id, host: n.host, port: n.port }
    : { id: n.id, host: n.host, port: n.port, respPort: n.respPort }
}

/**
 * A node's view of the cluster: the nodes of its cluster file plus the nodes it learned
 * since (by `POST /admin/cluster/nodes`, listed for their address only, `"partitions": []`).
 * It is the `Cluster` every server part holds, so whatever looks nodes up by id (RESP
 * forwarding, `/stores/<s>` addresses, the peer check) sees a learned node at once. The node
 * list is replaced, never mutated: a caller iterating it keeps a consistent list.
 */
export class AddressBook implements Cluster {
  readonly name: string
  private list: readonly ClusterNode[]
  private readonly learnedIds = new Set<number>()

  constructor(cluster: Cluster) {
    this.name = cluster.name
    this.list = [...cluster.nodes]
  }

  get nodes(): readonly ClusterNode[] {
    return this.list
  }

  /** The nodes learned after the cluster file (what `cluster-nodes.json` keeps). */
  learned(): NodeAddress[] {
    return this.list.filter((n) => this.learnedIds.has(n.id)).map(addressOf)
  }

  /**
   * The addresses of `addrs` this book does not have yet, checked against it. A known id
   * keeps its address: `refuse` throws RO_CONFLICT when one is given another address (a
   * request must not move a node silently, least of all the node itself), `keep` ignores it
   * (loading `cluster-nodes.json`: the cluster file wins). A new node on the endpoint of a
   * known one is refused (RO_BAD_REQUEST) either way.
   */
  unknown(addrs: readonly NodeAddress[], known: 'refuse' | 'keep'): NodeAddress[] {
    const byId = new Map(this.list.map((n) => [n.id, n]))
    const used = new Map<string, number>()
    for (const n of this.list) for (const p of endpointsOf(n)) used.set(p, n.id)
    const fresh: NodeAddress[] = []
    for (const a of addrs) {
      const have = byId.get(a.id)
      if (have) {
        if (known === 'refuse' && !sameAddress(have, a))
          throw new StoreError(
            'RO_CONFLICT',
            `node ${a.id} is known at ${describe(have)}, not ${describe(a)}: a known node keeps its address (change it in the cluster files and restart)`,
          )
        continue
      }
      for (const p of endpointsOf(a)) {
        const other = used.get(p)
        if (other !== undefined) throw new StoreError('RO_BAD_REQUEST', `node ${a.id}: ${p} is already node ${other}'s`)
      }
      fresh.push(addressOf(a))
    }
    return fresh
  }

  /** Adds the nodes of `addrs` with unknown ids (after `unknown` checked them); returns them. */
  learn(addrs: readonly NodeAddress[], known: 'refuse' | 'keep'): NodeAddress[] {
    const fresh = this.unknown(addrs, known)
    if (fresh.length === 0) return fresh
    for (const a of fresh) this.learnedIds.add(a.id)
    this.list = [...this.list, ...fresh.map((a) => ({ ...addressOf(a), partitions: [] }))].sort((a, b) => a.id - b.id)
    return fresh
  }

  /** What crosses a process boundary (a worker's config): a plain cluster. */
  toJSON(): Cluster {
    return { name: this.name, nodes: this.list }
  }
}

function endpointsOf(n: NodeAddress): string[] {
  return n.respPort === undefined ? [`${n.host}:${n.port}`] : [`${n.host}:${n.port}`, `${n.host}:${n.respPort}`]
}

function sameAddress(a: NodeAddress, b: NodeAddress): boolean {
  return a.host === b.host && a.port === b.port && a.respPort === b.respPort
}

function describe(a: NodeAddress): string {
  return `${a.host}:${a.port}${a.respPort === undefined ? '' : ` (RESP ${a.respPort})`}`
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function isNonNegativeInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
}

function isPort(v: unknown): v is number {
  return isNonNegativeInt(v) && v >= 1 && v <= 65535
}
