import type { Cluster } from '../cluster/cluster'
import { NodeClient } from './node-client'

/** One admin NodeClient per cluster node, closed together. */
export class ClusterAdmin {
  readonly clients: ReadonlyMap<number, NodeClient>

  constructor(
    readonly cluster: Cluster,
    adminToken: string | undefined,
    timeoutMs = 10_000,
    /** For the public read routes the admin calls consult (a store's live layout), when the nodes require it. */
    readToken?: string,
  ) {
    this.clients = new Map(cluster.nodes.map((n) => [n.id, new NodeClient(n, { adminToken, timeoutMs, readToken })]))
  }

  node(id: number): NodeClient {
    const c = this.clients.get(id)
    if (!c) throw new RangeError(`no node ${id}`)
    return c
  }

  get ids(): number[] {
    return [...this.clients.keys()]
  }

  close(): void {
    for (const c of this.clients.values()) c.close()
  }
}

/** Runs `fn` on every node in parallel; never rejects, one settled result per node. */
export async function onEveryNode<T>(
  ids: readonly number[],
  fn: (id: number) => Promise<T>,
): Promise<Map<number, PromiseSettledResult<T>>> {
  const settled = await Promise.allSettled(ids.map((id) => fn(id)))
  return new Map(ids.map((id, i) => [id, settled[i]!]))
}
