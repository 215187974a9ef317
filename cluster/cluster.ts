import { readFile } from 'node:fs/promises'
import { StoreError } from '../common/errors'
import type { ClusterLayoutNode } from './layout'

/** cluster.json: which node owns which partitions, and where each node listens. */
export interface ClusterNode {
  readonly id: number
  readonly host: string
  readonly port: number
  /** The node's RESP (Redis protocol) port, when it serves one; nodes forward keys to it. */
  readonly respPort?: number
  /**
   * Partitions the node owns in this file's layout. Empty: the node is listed for its
   * address only (it joins or leaves the cluster with a later or earlier version, whose own
   * layout names it), so one file can list every node of two layouts.
   */
  readonly partitions: readonly number[]
  /**
   * Reach the node over HTTPS, trusting these settings. Not read from cluster.json: the
   * caller adds it (`rostore ... --tls / --ca-file`, or `clusterWithTls` in client/http.ts).
   */
  readonly tls?: NodeTls
}

/** How clients check a node's TLS certificate. */
export interface NodeTls {
  /** PEM CA certificate(s) trusted instead of the system's (a private CA, a self-signed node). */
  readonly ca?: string | Buffer
  /** The name the certificate must carry, when it is not the node's host in cluster.json. */
  readonly servername?: string
}

export interface Cluster {
  readonly name: string
  readonly nodes: readonly ClusterNode[]
}

export async function loadCluster(path: string): Promise<Cluster> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    throw new StoreError('RO_BAD_CLUSTER', `${path}: cannot read cluster file: ${(err as Error).message}`, { cause: err })
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new StoreError('RO_BAD_CLUSTER', `${path}: not valid JSON: ${(err as Error).message}`, { cause: err })
  }
  return parseCluster(json, path)
}

/** Validates a parsed cluster document; `where` prefixes every message. */
export function parseCluster(json: unknown, where = 'cluster'): Cluster {
  const fail = (msg: string): never => {
    throw new StoreError('RO_BAD_CLUSTER', `${where}: ${msg}`)
  }
  if (!isObject(json)) return fail('must be a JSON object with "name" and "nodes"')
  const name = json['name']
  if (typeof name !== 'string' || name.length === 0) fail('"name" must be a non-empty string')
  const rawNodes = json['nodes']
  if (!Array.isArray(rawNodes) || rawNodes.length === 0) fail('"nodes" must be a non-empty array')
  const nodes: ClusterNode[] = []
  const ids = new Set<number>()
  const endpoints = new Set<string>()
  const owner = new Map<number, number>()
  for (const [i, raw] of (rawNodes as unknown[]).entries()) {
    if (!isObject(raw)) return fail(`nodes[${i}] must be an object`)
    const id = raw['id']
    if (!isNonNegativeInt(id)) return fail(`nodes[${i}]: "id" must be a non-negative integer`)
    if (ids.has(id)) fail(`nodes[${i}]: duplicate node id ${id}`)
    ids.add(id)
    const host = raw['host']
    if (typeof host !== 'string' || host.length === 0) return fail(`node ${id}: "host" must be a non-empty string`)
    const port = raw['port']
    if (!isNonNegativeInt(port) || port < 1 || port > 65535) return fail(`node ${id}: bad port ${JSON.stringify(port)} (1-65535)`)
    const endpoint = `${host}:${port}`
    if (endpoints.has(endpoint)) fail(`node ${id}: ${endpoint} is used by another node`)
    endpoints.add(endpoint)
    const respPort = raw['respPort']
    if (respPort !== undefined) {
      if (!isNonNegativeInt(respPort) || respPort < 1 || respPort > 65535)
        return fail(`node ${id}: bad respPort ${JSON.stringify(respPort)} (1-65535)`)
      const respEndpoint = `${host}:${respPort}`
      if (endpoints.has(respEndpoint)) fail(`node ${id}: respPort ${respEndpoint} is used by another port`)
      endpoints.add(respEndpoint)
    }
    const partitions = raw['partitions']
    if (!Array.isArray(partitions)) return fail(`node ${id}: has no "partitions" array (use [] for a node outside this layout)`)
    for (const p of partitions as unknown[]) {
      if (!isNonNegativeInt(p)) return fail(`node ${id}: partition ${JSON.stringify(p)} is not a non-negative integer`)
      const prev = owner.get(p)
      if (prev !== undefined) fail(`node ${id}: duplicate partition ${p} (also on node ${prev})`)
      owner.set(p, id)
    }
    const sorted = [...(partitions as number[])].sort((a, b) => a - b)
    nodes.push(
      respPort === undefined
        ? { id, host, port, partitions: sorted }
        : { id, host, port, respPort: respPort as number, partitions: sorted },
    )
  }
  if (owner.size === 0) fail('no node has partitions')
  for (let p = 0; p < owner.size; p++) {
    if (!owner.has(p)) fail(`gap in partition ids: partition ${p} is missing (partitions must be 0..${owner.size - 1})`)
  }
  return { name: name as string, nodes: nodes.sort((a, b) => a.id - b.id) }
}

/**
 * The part of a cluster that decides where keys go; hosts and ports are not in it, nor
 * the nodes listed without partitions (addresses only).
 */
export function clusterLayout(cluster: Cluster): ClusterLayoutNode[] {
  return cluster.nodes.filter((n) => n.partitions.length > 0).map((n) => ({ id: n.id, partitions: [...n.partitions] }))
}

export function sameLayout(a: readonly ClusterLayoutNode[], b: readonly ClusterLayoutNode[]): boolean {
  const key = (l: readonly ClusterLayoutNode[]): string =>
    JSON.stringify([...l].sort((x, y) => x.id - y.id).map((n) => [n.id, [...n.partitions].sort((x, y) => x - y)]))
  return key(a) === key(b)
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function isNonNegativeInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0
}
