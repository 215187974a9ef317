import { errorMessage, isStoreError } from '../../common/errors'
import { redactCredentials } from '../../common/redact'
import { clusterLayout, type Cluster } from '../../cluster/cluster'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import { parsePartitionFileName } from '../../formats/store/layout/partition-files'
import { ClusterAdmin, onEveryNode } from '../cluster-admin'
import { normalizeSource, readBuildManifests, type BuildManifests } from './source-manifests'
import { pushPeerOffers, type FetchFrom } from './partition-sources'

/**
 * What a push does on one node. `joins`: in the build's layout, serving nothing of the
 * store now (a new node: it fetches everything of its share). `stays`: in both layouts (it
 * fetches its new share). `leaves`: serving the store now, not in the build's layout (it
 * fetches nothing and keeps its version as a backup once the others swap). `idle`: neither.
 */
export type NodeRole = 'joins' | 'stays' | 'leaves' | 'idle'

export interface NodePlan {
  readonly nodeId: number
  readonly role: NodeRole
  /** Live version now; null when none (or the node could not say). */
  readonly live: number | null
  /** Partitions the node owns in its live version's layout (empty when it serves none). */
  readonly partitionsBefore: readonly number[]
  /** Partitions the node owns in the build's layout. */
  readonly partitionsAfter: readonly number[]
  /** Bytes of the node's files in the build: what its fetch downloads (0 when it holds the version already, or leaves). */
  readonly fetchBytes: number
  /** Format 2: of fetchBytes, what the node takes from peers rather than the build output (`--fetch-from auto`). */
  readonly peerBytes?: number
  readonly files: number
  /**
   * A build with --base: held partitions predicted to come by patch (the node holds the base
   * version and serves the build's layout, so it holds the base's files of its partitions).
   * Their patches' bytes, not their files', are in fetchBytes.
   */
  readonly byPatch?: readonly number[]
  /** Why the node could not be asked, if it could not. */
  readonly error?: string
}

export interface PushPlan {
  readonly store: string
  readonly version: number
  readonly from: string
  /** The build's layout differs from the layout some node serves now. */
  readonly layoutChange: boolean
  readonly nodes: readonly NodePlan[]
}

/** What a node says about the store now, for planning. */
export interface NodeState {
  readonly live: number | null
  readonly holds: readonly number[]
  readonly partitions: readonly number[]
  readonly layoutKey: string | undefined
  readonly error?: string
}

/**
 * The plan of `rostore push --dry-run`, also reported by a push: per node of the cluster
 * file, its role and how many bytes it will fetch. Reads the build's manifests and asks
 * each node (admin versions, and its live version's layout); changes nothing.
 */
export async function planPush(o: {
  cluster: Cluster
  store: string
  from: string
  adminToken?: string
  readToken?: string
  fetchFrom?: FetchFrom
}): Promise<PushPlan> {
  const from = normalizeSource(o.from)
  const built = await readBuildManifests(o.cluster, o.store, from, AbortSignal.timeout(60_000))
  const admin = new ClusterAdmin(o.cluster, o.adminToken, undefined, o.readToken)
  try {
    const states = await nodeStates(admin, o.store)
    return buildPlan(o.cluster, o.store, from, built, states, o.fetchFrom ?? 'auto')
  } finally {
    admin.close()
  }
}

/** Each node's live version, held versions and live partitions; a node that cannot be asked has an `error`. */
export async function nodeStates(admin: ClusterAdmin, store: string): Promise<Map<number, NodeState>> {
  const asked = await onEveryNode(admin.ids, async (id): Promise<NodeState> => {
    const node = admin.node(id)
    const v = await node
      .versions(store)
      .catch((err: unknown) => (isStoreError(err, 'RO_NOT_FOUND') ? { live: null, versions: [] } : Promise.reject(err)))
    if (v.live === null) return { live: null, holds: v.versions.map((x) => x.version), partitions: [], layoutKey: undefined }
    // The live layout is what tells a layout change: a node that does not give it (a read
    // token missing or wrong, a store stale or damaged) is reported, not taken as "no partitions".
    let info: Awaited<ReturnType<typeof node.storeInfo>> | undefined
    let error: string | undefined
    try {
      info = await node.storeInfo(store)
    } catch (err) {
      error = `cannot read its live layout: ${errorMessage(err)}`
    }
    const own = info?.layout.find((n) => n.id === id)
    return {
      live: v.live,
      holds: v.versions.map((x) => x.version),
      partitions: own ? [...own.partitions] : [],
      layoutKey: info ? layoutKey(info.layout) : undefined,
      ...(error === undefined ? {} : { error }),
    }
  })
  return new Map(
    [...asked].map(([id, r]) => [
      id,
      r.status === 'fulfilled' ? r.value : { live: null, holds: [], partitions: [], layoutKey: undefined, error: errorMessage(r.reason) },
    ]),
  )
}

export function buildPlan(
  cluster: Cluster,
  store: string,
  from: string,
  built: BuildManifests,
  states: ReadonlyMap<number, NodeState>,
  fetchFrom: FetchFrom = 'auto',
): PushPlan {
  const manifests = built.nodes
  const peerBytes = (id: number, patched: ReadonlySet<number>): { peerBytes?: number } => {
    if (built.manifest === undefined) return {}
    const offered = new Set(pushPeerOffers(built.manifest, id, fetchFrom).flatMap((o) => o.partitions.filter((p) => !patched.has(p))))
    const bytes = [...offered].reduce((a, p) => a + built.manifest!.partitionFiles[p]!.files.reduce((s, f) => s + f.size, 0), 0)
    return { peerBytes: bytes }
  }
  const first = manifests.values().next().value as StoreMetadata
  const after = new Map(clusterLayout(cluster).map((n) => [n.id, n.partitions]))
  const buildKey = layoutKey(first.layout)
  const nodes = cluster.nodes.map((n): NodePlan => {
    const s = states.get(n.id) ?? { live: null, holds: [], partitions: [], layoutKey: undefined }
    const meta = manifests.get(n.id)
    const serving = s.live !== null
    const role: NodeRole = meta ? (serving ? 'stays' : 'joins') : serving ? 'leaves' : 'idle'
    const fetches = meta !== undefined && !s.holds.includes(first.version)
    const patched = new Set(fetches && fetchFrom !== 'peers' && s.layoutKey === buildKey ? byPatch(built, meta, s) : [])
    const moved = fetches ? meta.files.filter((f) => !patched.has(parsePartitionFileName(f.name)?.partition as number)) : []
    const patchBytes = [...patched].reduce((a, p) => a + (built.manifest?.partitionFiles[p]?.patch?.size ?? 0), 0)
    return {
      nodeId: n.id,
      role,
      live: s.live,
      partitionsBefore: s.partitions,
      partitionsAfter: after.get(n.id) ?? [],
      fetchBytes: moved.reduce((a, f) => a + f.size, 0) + patchBytes,
      ...(fetches ? peerBytes(n.id, patched) : {}),
      files: moved.length + patched.size,
      ...(built.manifest?.base !== undefined && fetches ? { byPatch: [...patched] } : {}),
      ...(s.error === undefined ? {} : { error: s.error }),
    }
  })
  const layoutChange = [...states.values()].some((s) => s.layoutKey !== undefined && s.layoutKey !== buildKey)
  return { store, version: first.version, from, layoutChange, nodes }
}

/** Held partitions with a patch, when the node holds the base version (by its number or its data's). */
function byPatch(built: BuildManifests, meta: StoreMetadata, s: NodeState): number[] {
  const base = built.manifest?.base
  if (base === undefined || meta.held === undefined) return []
  if (!s.holds.includes(base.version) && !s.holds.includes(base.dataVersion)) return []
  return meta.held.filter((p) => built.manifest?.partitionFiles[p]?.patch !== undefined)
}

function layoutKey(layout: readonly { readonly id: number; readonly partitions: readonly number[] }[]): string {
  return JSON.stringify([...layout].sort((a, b) => a.id - b.id).map((n) => [n.id, [...n.partitions].sort((a, b) => a - b)]))
}

/** The plan as `rostore push --dry-run` prints it. */
export function formatPlan(p: PushPlan): string {
  const mib = (b: number): string => (b / 1048576).toFixed(2)
  const lines = [
    `push of ${p.store} version ${p.version} from ${redactCredentials(p.from)}${p.layoutChange ? ' (a new cluster layout)' : ''}:`,
    ...p.nodes.map((n) => {
      const what =
        n.role === 'leaves'
          ? `leaves the layout: fetches nothing, keeps version ${n.live} as a backup after the swap`
          : n.role === 'idle'
            ? 'not in the layout, serves nothing: unchanged'
            : `${n.role === 'joins' ? 'joins' : 'stays'}: partitions [${n.partitionsBefore.join(',')}] -> [${n.partitionsAfter.join(',')}], fetches ${n.files} files${n.byPatch === undefined ? '' : ` (partitions [${n.byPatch.join(',')}] by patch)`}, ${n.fetchBytes} bytes (${mib(n.fetchBytes)} MiB${n.peerBytes === undefined ? '' : `, ${mib(n.peerBytes)} MiB of it from peers`})`
      return `  node ${n.nodeId} (live ${n.live ?? 'none'}): ${what}${n.error ? ` [could not ask: ${n.error}]` : ''}`
    }),
    `  total: ${p.nodes.reduce((a, n) => a + n.fetchBytes, 0)} bytes to fetch, ${p.nodes.reduce((a, n) => a + n.fetchBytes - (n.peerBytes ?? 0), 0)} of them from the build output`,
    // The plan's nodes are the cluster file's: a push hands each of them all their addresses.
    `  before fetching, every reachable node would be handed the addresses of nodes ${p.nodes.map((n) => n.nodeId).join(', ')} (POST /admin/cluster/nodes)`,
  ]
  return lines.join('\n')
}
