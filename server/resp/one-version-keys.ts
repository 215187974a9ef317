import { StoreError } from '../../common/errors'
import { readOneVersion } from '../../cluster/one-version-read'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import type { ServedStore } from '../../swapper/served-store'
import { getsCommand, type Forwarder } from './forwarder'
import { partitionOf, type StoreRoute } from './store-routes'

/** What a many-key read of one store got in its first pass, per key (by the command's key index). */
export interface MixedAnswers {
  readonly sv: ServedStore
  readonly route: StoreRoute
  /** The command's key index of each of the store's keys, and the keys (copies: they outlive the parser's buffer). */
  readonly idx: readonly number[]
  readonly keys: readonly Buffer[]
  /** Whole-command arrays, written in place when one version is found. */
  readonly values: (Buffer | undefined)[]
  readonly versionOf: readonly number[]
  readonly nodeOf: readonly number[]
}

export interface OneVersionDeps {
  readonly nodeId: number
  readonly forwarder: Forwarder
  /** Whether this node holds every key in the version `meta` describes (undefined while its key hash loads). */
  readonly holdsAll: (meta: StoreMetadata, keys: readonly Buffer[]) => boolean | undefined
}

/** Whether the store's keys of a command were answered by more than one version. */
export function isMixed(a: Pick<MixedAnswers, 'idx' | 'versionOf'>): boolean {
  const first = a.versionOf[a.idx[0] as number]
  return a.idx.some((i) => a.versionOf[i] !== first)
}

/**
 * A many-key read (MGET, EXISTS) whose keys were answered by different versions, as when
 * this node serves one version and the replicas it forwards to another (the cluster is
 * mid-swap, or split until its nodes converge): the keys are read again, each from a
 * replica that serves one common version, newest first, by the routing client's rule
 * (readOneVersion). This node's own files count as a replica. False when no version can
 * serve every key: the command then fails rather than mixing versions.
 */
export async function settleOneVersion(d: OneVersionDeps, a: MixedAnswers): Promise<boolean> {
  const replicas = a.keys.map((k) => a.route.replicas[partitionOf(a.route, k)] as readonly number[])
  const nodeVersions = new Map<number, number>()
  a.idx.forEach((i) => nodeVersions.set(a.nodeOf[i] as number, a.versionOf[i] as number))
  const one = await readOneVersion(
    {
      replicas,
      values: a.idx.map((i) => a.values[i]),
      versionOf: a.idx.map((i) => a.versionOf[i] as number),
      nodeVersions,
    },
    (node, js) =>
      readFrom(
        d,
        a,
        node,
        js.map((j) => a.keys[j] as Buffer),
      ),
  )
  if (!one) return false
  a.idx.forEach((i, j) => (a.values[i] = one.values[j]))
  return true
}

/** Keys from one replica, with the version that answered: this node's own live version, or a peer's through ROSTORE.GETS. */
function readFrom(
  d: OneVersionDeps,
  a: MixedAnswers,
  node: number,
  keys: readonly Buffer[],
): Promise<{ version: number; values: (Buffer | undefined)[] }> {
  if (node === d.nodeId) {
    const lease = a.sv.stale === undefined ? a.sv.live.acquire() : undefined
    if (!lease) return Promise.reject(new StoreError('RO_UNAVAILABLE', 'no live version here'))
    try {
      if (d.holdsAll(lease.reader.metadata, keys) !== true) throw new StoreError('RO_NOT_SERVING', 'keys not held here')
      return Promise.resolve({ version: lease.version, values: lease.reader.getMany(keys) })
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)))
    } finally {
      lease.release()
    }
  }
  return new Promise((resolve, reject) => {
    // Minimum version 0: the caller wants whichever version this replica serves, to compare.
    d.forwarder.fetch(getsCommand(a.sv.store, keys), keys.length, [node], 0, (err, r) => {
      if (err || !r) reject(err ?? new StoreError('RO_UNAVAILABLE', 'no answer'))
      else resolve({ version: r.version, values: r.values })
    })
  })
}
