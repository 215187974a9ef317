import { randomUUID } from 'node:crypto'
import { StoreError, errorMessage, isStoreError } from '../../common/errors'
import { redactCredentials } from '../../common/redact'
import type { Cluster } from '../../cluster/cluster'
import { ClusterAdmin, onEveryNode } from '../cluster-admin'
import { fetchOnNode, holdsVersion } from './fetch-jobs'
import { partitionsMoved, type NodePartitionsMoved } from './moved'
import type { RemoteJob } from '../node-client'
import { PushLease } from './lease'
import { handAddresses } from './addresses'
import { nextSeq, writePushRecords } from './records'
import { canCommit } from '../../cluster/push-quorum'
import { decideCluster } from './decide'
import { normalizeSource, readBuildManifests, type BuildManifests } from './source-manifests'
import { pushPeerOffers, type FetchFrom, type PeerOffer } from './partition-sources'
import { buildPlan, nodeStates, type PushPlan } from './plan'
import type { PushEvent } from './events'

export interface PushOptions {
  readonly cluster: Cluster
  readonly store: string
  /** Build output: a path or an http(s) URL every node can read. */
  readonly from: string
  readonly adminToken?: string
  /** The nodes' read token, when they require one (the plan reads each node's live layout). */
  readonly readToken?: string
  /** Per-node fetch rate in bytes/s; default: the node's own limit. */
  readonly throttle?: number
  /** Whole fetch phase; default 3600 s. */
  readonly timeoutMs?: number
  /**
   * Format 2: where nodes take partitions from (client/push/partition-sources.ts); default
   * `auto`, each partition read from the build output once. Format 1 is always `source`.
   */
  readonly fetchFrom?: FetchFrom
  /** Go live when at most this many nodes failed their fetch (below the replication). */
  readonly allowFailedNodes?: number
  /** Push even when the version is older than a node's live version. */
  readonly force?: boolean
  readonly pollMs?: number
  /** The push lease on every node, renewed while the push runs; default 15 s (a dead push frees the store this fast). */
  readonly leaseMs?: number
  readonly onEvent?: (e: PushEvent) => void
}

export type { PushEvent } from './events'

/** `backup`: a node that left the layout; it keeps its version, marked stale (reads refused, clients route around it). */
/**
 * `swap-pending`: the push committed and the node did not confirm its swap (down, or its
 * answer lost); it swaps by itself when it is back. `undecided`: no majority of the nodes
 * answered the vote; they decide among themselves.
 */
export type NodeState =
  'live' | 'fetch-failed' | 'swap-failed' | 'swap-pending' | 'undecided' | 'rolled-back' | 'cleaned-up' | 'stale' | 'unchanged' | 'backup'

export interface NodeOutcome {
  readonly nodeId: number
  readonly state: NodeState
  readonly previous?: number | null
  readonly error?: string
  /** Bytes the node's fetch downloaded (by the node's own count), when it fetched. */
  readonly fetchedBytes?: number
  /** A format-2 fetch: how each held partition came (docs/SERVING.md, "Delta pushes"). */
  readonly partitions?: NodePartitionsMoved
}

export interface PushResult {
  readonly store: string
  readonly version: number
  readonly status: 'live' | 'live-with-failures' | 'failed' | 'already-live'
  readonly nodes: readonly NodeOutcome[]
  readonly fetchSeconds: number
  readonly swapSeconds: number
  /** What the push planned per node (the same as `--dry-run` prints), when it got that far. */
  readonly plan?: PushPlan
}

/**
 * Fetch a build on every node in parallel, swap only when all fetched, undo on failure:
 * the cluster serves one version before and after. A lease on every node (taken in node
 * order, so two pushes meet at the first node) makes concurrent pushes of one store fail
 * fast instead of interleaving.
 */
export async function pushStore(o: PushOptions): Promise<PushResult> {
  const from = normalizeSource(o.from)
  const emit = o.onEvent ?? (() => undefined)
  emit({ type: 'step', message: `reading the build manifests of ${o.store} from ${redactCredentials(from)}` })
  const built = await readBuildManifests(o.cluster, o.store, from, AbortSignal.timeout(60_000))
  const fetchFrom = o.fetchFrom ?? 'auto'
  const manifest = built.manifest
  return pushVersion(o, built, {
    source: from,
    offers: (id) => (manifest === undefined ? [] : pushPeerOffers(manifest, id, fetchFrom)),
    ...(manifest === undefined ? {} : { fetchFrom }),
  })
}

/** Where the nodes of a push fetch the version from. */
export interface VersionFetch {
  /** The build output; undefined when the version exists only on nodes (a rebalance). */
  readonly source?: string
  readonly fetchFrom?: FetchFrom
  /** Sent to each node with its fetch: a version made by the pusher (a rebalance's), which no build output holds. */
  readonly manifest?: BuildManifests['manifest']
  readonly offers: (nodeId: number) => PeerOffer[]
}

/**
 * The push of one version whose manifests are known, from wherever its files are: a
 * build output, or the nodes themselves (a rebalance).
 */
export async function pushVersion(
  o: Omit<PushOptions, 'from' | 'fetchFrom'>,
  built: BuildManifests,
  how: VersionFetch,
): Promise<PushResult> {
  const emit = o.onEvent ?? (() => undefined)
  const from = how.source ?? 'the nodes'
  const manifests = built.nodes
  const allowFailed = o.allowFailedNodes ?? 0
  const admin = new ClusterAdmin(o.cluster, o.adminToken, undefined, o.readToken)
  const timeoutMs = o.timeoutMs ?? 3_600_000
  const lease = new PushLease(admin, o.store, `push-${randomUUID()}`, o.leaseMs)
  const locked = lease.held
  try {
    const version = manifests.values().next().value!.version
    if (allowFailed < 0 || (allowFailed > 0 && allowFailed >= manifests.values().next().value!.replication)) {
      throw new StoreError(
        'RO_BAD_OPTION',
        `--allow-failed-nodes ${allowFailed} must be below the replication factor ${manifests.values().next().value!.replication}`,
      )
    }

    // Nodes of the file outside the build's layout (listed with no partitions) are leaving
    // it, or were never in it: they fetch nothing, and keep what they serve until the swap.
    const inLayout = new Set(manifests.keys())
    // Lease every node in id order; a node of the layout that is down counts against
    // allowFailed, one outside it does not.
    const down = new Map<number, string>()
    for (const id of admin.ids.sort((a, b) => a - b)) {
      try {
        await lease.take(id)
      } catch (err) {
        if (isStoreError(err, 'RO_CONFLICT'))
          throw new StoreError('RO_CONFLICT', `another push of ${o.store} is in progress (${errorMessage(err)})`)
        if (!isStoreError(err, 'RO_UNAVAILABLE')) throw err
        if (inLayout.has(id)) down.set(id, errorMessage(err))
        else emit({ type: 'step', message: `node ${id} (outside the new layout) is unreachable: ${errorMessage(err)}` })
      }
    }
    const leaving = locked.filter((id) => !inLayout.has(id))
    await handAddresses(admin, locked, emit)
    const plan = buildPlan(o.cluster, o.store, from, built, await nodeStates(admin, o.store), how.fetchFrom)
    if (down.size > allowFailed) return failed(version, o.cluster, down, 'no node changed: not every node could be reached')

    // Version checks before any byte moves.
    const previous = new Map<number, number | null>()
    const statuses = await onEveryNode(
      locked.filter((id) => inLayout.has(id)),
      (id) =>
        admin
          .node(id)
          .versions(o.store)
          .catch((err: unknown) => (isStoreError(err, 'RO_NOT_FOUND') ? { live: null, versions: [] } : Promise.reject(err))),
    )
    for (const [id, s] of statuses) {
      if (s.status === 'rejected') {
        down.set(id, errorMessage(s.reason))
        continue
      }
      previous.set(id, s.value.live)
      if (s.value.live !== null && s.value.live > version && !o.force) {
        throw new StoreError(
          'RO_CONFLICT',
          `node ${id} serves version ${s.value.live}, newer than ${version}; use --force to push an older version`,
        )
      }
    }
    if (down.size > allowFailed) return failed(version, o.cluster, down, 'no node changed: not every node could be reached')
    const targets = locked.filter((id) => !down.has(id) && inLayout.has(id))
    if (targets.every((id) => previous.get(id) === version)) {
      return {
        store: o.store,
        version,
        status: 'already-live',
        nodes: targets.map((nodeId) => ({ nodeId, state: 'unchanged' as const, previous: version })),
        fetchSeconds: 0,
        swapSeconds: 0,
        plan,
      }
    }

    // Fetch everywhere (nodes that already hold the version skip it).
    emit({ type: 'step', message: `fetching version ${version} on ${targets.length} nodes` })
    const t0 = Date.now()
    const deadline = t0 + timeoutMs
    // Once more nodes failed than allowed, the others are cancelled rather than waited for.
    const giveUp = new AbortController()
    let fetchFailed = down.size
    const hadBefore = (id: number): boolean => {
      const have = statuses.get(id)
      return have?.status === 'fulfilled' && have.value.versions.some((v) => v.version === version)
    }
    const fetched = await onEveryNode(targets, async (id): Promise<RemoteJob | undefined> => {
      try {
        if (hadBefore(id)) return undefined
        const done = await fetchOnNode(admin, id, {
          store: o.store,
          body: {
            ...(how.source === undefined ? {} : { source: how.source }),
            version,
            lease: lease.owner,
            ...(o.throttle ? { maxBytesPerSec: o.throttle } : {}),
            ...(how.fetchFrom === undefined ? {} : { fetchFrom: how.fetchFrom, peers: how.offers(id) }),
            ...(how.manifest === undefined ? {} : { manifest: how.manifest }),
          },
          deadline,
          pollMs: o.pollMs ?? 250,
          emit,
          signal: giveUp.signal,
        })
        return done
      } catch (err) {
        // The node may have got the version meanwhile by itself (self-repair of a node that
        // missed the last push fetches the same version): then it is ready for the swap.
        if (!giveUp.signal.aborted && (await holdsVersion(admin, id, o.store, version))) return undefined
        if (++fetchFailed > allowFailed) giveUp.abort()
        throw err
      }
    })
    const fetchSeconds = (Date.now() - t0) / 1000
    const fetchFailures = new Map([
      ...down,
      ...[...fetched]
        .filter(([, r]) => r.status === 'rejected')
        .map(([id, r]) => [id, errorMessage((r as PromiseRejectedResult).reason)] as const),
    ])

    // A decision needs a majority of the layout (cluster/push-quorum.ts): a version only a
    // minority holds is dropped like a failed fetch.
    const minority = !canCommit({ participants: targets.filter((id) => !fetchFailures.has(id)), missed: [...fetchFailures.keys()] })
    if (fetchFailures.size > allowFailed || minority) {
      emit({
        type: 'step',
        message: `fetch failed on ${fetchFailures.size} node(s)${minority ? ', a majority of the layout does not hold the version' : ''}; removing the fetched copies, no node swapped`,
      })
      // Every node the push asked to fetch drops the version if it has it: a fetch cancelled
      // in its last step (verify, rename, opening the reader) may still have added it.
      const asked = targets.filter((id) => !hadBefore(id))
      const dropped = await onEveryNode(asked, (id) =>
        admin
          .node(id)
          .deleteVersion(o.store, version)
          .then(
            () => true,
            (err: unknown) => (isStoreError(err, 'RO_NOT_FOUND') ? false : Promise.reject(err)),
          ),
      )
      const cleaned = new Set([...dropped].filter(([, r]) => r.status === 'fulfilled' && r.value).map(([id]) => id))
      return failed(version, o.cluster, fetchFailures, minority ? 'fetch failed on a majority of the layout' : 'fetch failed', cleaned)
    }

    // The decision, durable on the nodes before any swaps: commit iff a majority of the
    // layout's nodes (all of which fetched) voted it; each node then swaps itself, so a pusher dying from
    // here on leaves a decision the nodes finish (server/peers/push-resolver.ts).
    lease.assertHeld('the decision')
    const swapTargets = targets.filter((id) => !fetchFailures.has(id))
    emit({ type: 'step', message: `deciding version ${version} on ${swapTargets.length} nodes` })
    const t1 = Date.now()
    const seq = await nextSeq(admin, swapTargets, o.store)
    const decided = await decideCluster(
      admin,
      o.store,
      {
        pushId: lease.owner,
        kind: 'push',
        version,
        participants: swapTargets,
        missed: [...fetchFailures.keys()],
        ...(how.source === undefined ? {} : { source: redactCredentials(how.source) }),
        seq,
      },
      new Set(swapTargets.filter((id) => !hadBefore(id))),
      emit,
    )
    const swapSeconds = (Date.now() - t1) / 1000
    if (decided.outcome !== 'commit') {
      emit({ type: 'step', message: `not committed: ${decided.reason ?? 'no reason'}` })
      const nodes: NodeOutcome[] = o.cluster.nodes.map((n) => {
        if (!swapTargets.includes(n.id))
          return inLayout.has(n.id)
            ? { nodeId: n.id, state: 'fetch-failed', error: fetchFailures.get(n.id) }
            : { nodeId: n.id, state: 'unchanged' }
        const a = decided.applied.get(n.id)
        if (decided.outcome === null) return { nodeId: n.id, state: 'undecided', previous: previous.get(n.id), error: decided.reason }
        return a?.status === 'fulfilled'
          ? { nodeId: n.id, state: hadBefore(n.id) ? 'unchanged' : 'cleaned-up', previous: previous.get(n.id) }
          : {
              nodeId: n.id,
              state: 'swap-failed',
              previous: previous.get(n.id),
              error: `aborted; ${a ? errorMessage(a.reason) : 'not told'}`,
            }
      })
      return { store: o.store, version, status: 'failed', nodes, fetchSeconds, swapSeconds, plan }
    }
    // Committed: a node that did not answer (down, or its answer lost) swaps by itself when it is back.
    const pending = new Map(
      [...decided.applied]
        .filter(([, r]) => r.status === 'rejected')
        .map(([id, r]) => [id, errorMessage((r as PromiseRejectedResult).reason)]),
    )
    for (const [id, why] of pending) emit({ type: 'step', message: `node ${id} did not confirm its swap (${why}); it swaps by itself` })

    // Every node that took the push keeps its record, naming the nodes that missed it: a
    // missed node refuses reads of the store until it holds the version (it fetches it
    // itself), now if it is up, or when it restarts and asks its peers.
    const unrecorded = await writePushRecords(
      admin,
      {
        store: o.store,
        version,
        missed: [...fetchFailures.keys()],
        ...(how.source === undefined ? {} : { source: how.source }),
        nodes: swapTargets,
        ...(how.fetchFrom === undefined ? {} : { partitioned: true }),
      },
      seq,
    )
    for (const [id, why] of unrecorded) emit({ type: 'step', message: `node ${id} did not keep the push record: ${why}` })
    // A node that was stale (marked by hand, or by an older rostore's push) is current again.
    await onEveryNode(swapTargets, (id) => admin.node(id).setStale(o.store, undefined))
    // Nodes that left the layout keep their version as a backup (a rollback swaps back to
    // it): marked stale, they refuse reads, and clients, which follow the live layout, do
    // not ask them.
    const wasServing = (id: number): boolean => plan.nodes.find((n) => n.nodeId === id)?.role === 'leaves'
    const retired = await onEveryNode(leaving.filter(wasServing), (id) =>
      admin.node(id).setStale(o.store, `not in the layout of version ${version}: kept as a backup`),
    )
    const fetchedBytes = (id: number): { fetchedBytes?: number; partitions?: NodePartitionsMoved } => {
      const r = fetched.get(id)
      if (r?.status !== 'fulfilled' || r.value === undefined) return {}
      const moved = partitionsMoved(r.value)
      const bytes = r.value.progress?.bytesDone
      return { ...(bytes === undefined ? {} : { fetchedBytes: bytes }), ...(moved === undefined ? {} : { partitions: moved }) }
    }
    const nodes: NodeOutcome[] = o.cluster.nodes.flatMap((n): NodeOutcome[] => {
      if (fetchFailures.has(n.id)) return [{ nodeId: n.id, state: 'stale', error: fetchFailures.get(n.id) }]
      if (pending.has(n.id)) return [{ nodeId: n.id, state: 'swap-pending', previous: previous.get(n.id), error: pending.get(n.id) }]
      if (inLayout.has(n.id)) return [{ nodeId: n.id, state: 'live', previous: previous.get(n.id), ...fetchedBytes(n.id) }]
      const r = retired.get(n.id)
      if (!r) return [{ nodeId: n.id, state: 'unchanged' }]
      return [
        { nodeId: n.id, state: 'backup', ...(r.status === 'rejected' ? { error: `not marked stale: ${errorMessage(r.reason)}` } : {}) },
      ]
    })
    return {
      store: o.store,
      version,
      status: fetchFailures.size > 0 || pending.size > 0 ? 'live-with-failures' : 'live',
      nodes,
      fetchSeconds,
      swapSeconds,
      plan,
    }
  } finally {
    await lease.release()
    admin.close()
  }

  function failed(
    version: number,
    cluster: Cluster,
    errors: ReadonlyMap<number, string>,
    why: string,
    cleaned = new Set<number>(),
  ): PushResult {
    emit({ type: 'step', message: why })
    return {
      store: o.store,
      version,
      status: 'failed',
      nodes: cluster.nodes.map((n) =>
        errors.has(n.id)
          ? { nodeId: n.id, state: 'fetch-failed' as const, error: errors.get(n.id) }
          : { nodeId: n.id, state: cleaned.has(n.id) ? ('cleaned-up' as const) : ('unchanged' as const) },
      ),
      fetchSeconds: 0,
      swapSeconds: 0,
    }
  }
}
