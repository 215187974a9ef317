import { FETCH_FROM, type FetchFrom } from '../../fetcher/partition-fetch'
import { requestVersion } from '../../swapper/disk/version-names'
import { badRequest } from '../http/http-util'
import type { PartitionRequest } from '../jobs/fetch-runner'

/** A fetch body may carry a version manifest inline; the manifest's own bound. */
export const MAX_INLINE_MANIFEST_BYTES = 16 << 20
/** The fetch route's body bound: the inline manifest and the rest. */
export const MAX_FETCH_BODY_BYTES = MAX_INLINE_MANIFEST_BYTES + (1 << 20)
/** Peers one fetch may name: far above any cluster's replicas, bounded all the same. */
export const MAX_FETCH_PEERS = 64

const PARTITION = /^(0|[1-9][0-9]{0,8})$/

function nonNegativeInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
}

/**
 * The format-2 part of a fetch body (`fetchFrom`, `peers`, `manifest`), or undefined for a
 * format-1 fetch (none of them given). `peers`: `[{nodeId, version?, partitions?}]`, at most
 * 64, nodes the node knows by id (their addresses come from its address book, never from
 * the request); `manifest`: a version manifest object, at most 16 MiB.
 */
export function parsePartitionFetch(body: Record<string, unknown>, hasSource: boolean): PartitionRequest | undefined {
  const { fetchFrom: from, peers: rawPeers, manifest } = body
  if (from === undefined && rawPeers === undefined && manifest === undefined) return undefined
  if (from !== undefined && !(FETCH_FROM as readonly unknown[]).includes(from))
    throw badRequest(`fetchFrom must be ${FETCH_FROM.join(', ')}`)
  const fetchFrom = (from ?? 'auto') as FetchFrom
  if (fetchFrom !== 'peers' && !hasSource)
    throw badRequest(`fetchFrom ${fetchFrom} needs a source (the build output); from peers only: "fetchFrom": "peers"`)
  if (rawPeers !== undefined && (!Array.isArray(rawPeers) || rawPeers.length > MAX_FETCH_PEERS))
    throw badRequest(`peers must be an array of at most ${MAX_FETCH_PEERS} {nodeId, version?, partitions?}`)
  const peers = ((rawPeers ?? []) as unknown[]).map((raw, i) => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest(`peers[${i}] must be an object`)
    const p = raw as Record<string, unknown>
    for (const k of Object.keys(p))
      if (!['nodeId', 'version', 'partitions'].includes(k)) throw badRequest(`peers[${i}]: unknown field ${k.slice(0, 64)}`)
    if (!nonNegativeInt(p['nodeId'])) throw badRequest(`peers[${i}].nodeId must be a node id`)
    const version = p['version'] === undefined ? undefined : requestVersion(p['version'], `peers[${i}].version`)
    const parts = p['partitions']
    if (
      parts !== undefined &&
      (!Array.isArray(parts) || parts.length > 1 << 16 || !parts.every((x) => nonNegativeInt(x) && PARTITION.test(String(x))))
    )
      throw badRequest(`peers[${i}].partitions must be an array of partition ids`)
    return {
      nodeId: p['nodeId'],
      ...(version === undefined ? {} : { version }),
      ...(parts === undefined ? {} : { partitions: parts as number[] }),
    }
  })
  if (fetchFrom === 'peers' && peers.length === 0) throw badRequest('fetchFrom peers needs peers')
  if (manifest !== undefined && (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)))
    throw badRequest('manifest must be a version manifest object')
  const bytes = manifest === undefined ? undefined : Buffer.from(JSON.stringify(manifest))
  if (bytes !== undefined && bytes.length > MAX_INLINE_MANIFEST_BYTES)
    throw badRequest(`manifest is larger than ${MAX_INLINE_MANIFEST_BYTES} bytes`)
  return { fetchFrom, peers, ...(bytes === undefined ? {} : { manifest: bytes }) }
}
