import { StoreError, errorMessage, isStoreError } from '../common/errors'
import type { Cluster } from '../builder/cluster'
import { buildRing, routeHash, type Ring } from '../builder/routing'
import { createKeyHasher, keyBytes, type KeyHasher } from '../formats/store/key-hash'
import { NodeClient, type RemoteStoreInfo } from './node-client'

export interface StoreClientOptions {
  readonly cluster: Cluster
  readonly store: string
  /** Per request; default 2000 ms. */
  readonly timeoutMs?: number
  /** Keys per multi-get request; default 1000. */
  readonly batchSize?: number
}

/**
 * The routing client. It learns the store's replication, layout, key hash and
 * serializers from the nodes, computes each key's replica list with the builder's routing
 * function, asks the master first and fails over to the next replica on connection
 * errors, timeouts, 5xx and stale stores (503). Absent keys are `undefined`.
 */
export class StoreClient {
  private constructor(
    readonly store: string,
    readonly info: RemoteStoreInfo,
    private readonly nodes: ReadonlyMap<number, NodeClient>,
    private readonly ring: Ring,
    private readonly hasher: KeyHasher,
    private readonly batchSize: number,
  ) {}

  static async connect(opts: StoreClientOptions): Promise<StoreClient> {
    const nodes = new Map(opts.cluster.nodes.map((n) => [n.id, new NodeClient(n, { timeoutMs: opts.timeoutMs ?? 2000 })]))
    const failures: string[] = []
    for (const c of nodes.values()) {
      try {
        const info = await c.storeInfo(opts.store)
        for (const n of info.layout) {
          if (!nodes.has(n.id)) throw new StoreError('RO_BAD_CLUSTER', `store ${opts.store} was built for node ${n.id}, which cluster.json does not list`)
        }
        return new StoreClient(opts.store, info, nodes, buildRing(info.layout), await createKeyHasher(info.keyHash), opts.batchSize ?? 1000)
      } catch (err) {
        if (isStoreError(err, 'RO_BAD_CLUSTER')) throw err
        failures.push(errorMessage(err))
      }
    }
    for (const c of nodes.values()) c.close()
    throw new StoreError('RO_UNAVAILABLE', `no node could describe store ${opts.store}: ${failures.join('; ')}`)
  }

  /** Replica node ids of a key, master first. */
  replicasOf(key: Uint8Array | string): number[] {
    return routeHash(this.ring, this.hasher.hash(keyBytes(key)), this.info.replication)
  }

  async get(key: Uint8Array | string): Promise<Buffer | undefined> {
    const failures: string[] = []
    for (const id of this.replicasOf(key)) {
      try {
        return await this.nodes.get(id)!.get(this.store, key)
      } catch (err) {
        if (!isFailover(err)) throw err
        failures.push(errorMessage(err))
      }
    }
    throw new StoreError('RO_UNAVAILABLE', `no replica answered for the key: ${failures.join('; ')}`)
  }

  /** Values in the order of `keys`; keys are batched into one multi-get per node. */
  async getMany(keys: readonly (Uint8Array | string)[]): Promise<(Buffer | undefined)[]> {
    const out = new Array<Buffer | undefined>(keys.length)
    const replicas = keys.map((k) => this.replicasOf(k))
    let pending = keys.map((_, i) => i)
    const failures: string[] = []
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt >= this.info.replication) {
        throw new StoreError('RO_UNAVAILABLE', `no replica answered for ${pending.length} keys: ${failures.join('; ')}`)
      }
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
              const values = await this.nodes.get(node)!.getMany(this.store, batch.map((i) => keys[i]!))
              batch.forEach((i, j) => (out[i] = values[j]))
            } catch (err) {
              if (!isFailover(err)) throw err
              failures.push(errorMessage(err))
              retry.push(...batch)
            }
          }),
        ),
      )
      pending = retry
    }
    return out
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

/** Errors another replica may not have: the node is unreachable, failing or stale. */
function isFailover(err: unknown): boolean {
  return isStoreError(err, 'RO_UNAVAILABLE')
}

function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
