import type { NodeTls } from '../../cluster/cluster'
import { StoreError } from '../../common/errors'
import { HttpSource } from './http'

/** A node that holds (or is fetching) partitions of a version, and where to ask it. */
export interface PartitionPeer {
  readonly nodeId: number
  /** The peer's HTTP root, `http(s)://host:port`. */
  readonly url: string
  /** The version to ask the peer for; default the fetched one (a rebalance names the peer's older version of the same data). */
  readonly version?: number
  /** The partitions to ask it for; default those the manifest's layout gives it. */
  readonly partitions?: readonly number[]
}

/**
 * The peer file endpoint of a node as a fetch source: `GET <url>/admin/stores/<store>/
 * versions/<version>/files/<name>` with the cluster's admin token, Range for resume, 409
 * read as "not ready yet" (the peer is still fetching that file).
 */
export function peerSource(
  peer: PartitionPeer,
  store: string,
  version: number,
  access: { readonly token?: string; readonly tls?: NodeTls },
): HttpSource {
  let root: URL
  try {
    root = new URL(peer.url)
  } catch {
    throw new StoreError('RO_BAD_REQUEST', `peer node ${peer.nodeId}: not a URL`)
  }
  if ((root.protocol !== 'http:' && root.protocol !== 'https:') || root.username !== '' || root.search !== '' || root.hash !== '') {
    throw new StoreError('RO_BAD_REQUEST', `peer node ${peer.nodeId}: the URL must be http(s)://host:port`)
  }
  root.pathname = `/admin/stores/${encodeURIComponent(store)}/versions/${peer.version ?? version}/files/`
  return new HttpSource(root, {
    notReadyOn409: true,
    ...(access.token === undefined ? {} : { headers: { Authorization: `Bearer ${access.token}` } }),
    ...(access.tls === undefined ? {} : { tls: access.tls }),
  })
}
