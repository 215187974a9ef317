import type { ServerResponse } from 'node:http'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import type { StoreVersions } from '../../swapper/store-versions'
import { sendJson } from '../http/http-util'
import { StoreError } from '../../common/errors'
import type { AppContext, ReadContext } from '../context'
import type { ServedStore } from '../../swapper/served-store'
import type { ServingMirror } from '../../swapper/serving-mirror'

/** The response header naming the version a read was answered from. */
export const VERSION_HEADER = 'X-Rostore-Version'

/**
 * A store as the read routes see it. A node without it answers RO_NOT_SERVING (421), not
 * 404: it may be a node that joined empty, or one the store's live layout does not name,
 * and a routing client asks the nodes of the live layout instead (never "absent").
 */
export function servedStore(ctx: ReadContext, store: string): ServedStore {
  const sv = ctx.stores.get(store)
  if (!sv) throw new StoreError('RO_NOT_SERVING', `node ${ctx.nodeId} does not serve store ${store}`)
  return sv
}

/** A store's versions on disk (admin routes); RO_NOT_FOUND when the node has none of that name. */
export function knownStore(ctx: AppContext, store: string): StoreVersions<ServingMirror> {
  const sv = ctx.dataDir.get(store)
  if (!sv) throw new StoreError('RO_NOT_FOUND', `no store ${store} on this node`)
  return sv
}

export function checkServable(sv: ServedStore): void {
  if (sv.stale) throw new StoreError('RO_UNAVAILABLE', `store ${sv.store} is marked stale on this node: ${sv.stale.reason}`)
}

/**
 * No reader to lease: a live version that failed to open is RO_UNAVAILABLE (a replica
 * that should answer and cannot); none at all (versions fetched, none swapped in yet) is
 * RO_NOT_SERVING, like a node without the store.
 */
export function noLiveVersion(sv: ServedStore): StoreError {
  if (sv.loadError === undefined && sv.live.version === undefined) {
    return new StoreError('RO_NOT_SERVING', `store ${sv.store} has no live version on this node`)
  }
  return new StoreError('RO_UNAVAILABLE', `store ${sv.store} has no live version on this node${sv.loadError ? ` (${sv.loadError})` : ''}`)
}

/**
 * 421 RO_NOT_SERVING with the version that decided it: the client routed by another
 * layout than the live version's, and must not take the answer for "absent".
 */
export function sendMisdirected(res: ServerResponse, meta: StoreMetadata, what: string): void {
  sendJson(
    res,
    421,
    {
      error: {
        code: 'RO_NOT_SERVING',
        message: `${what} not on node ${meta.nodeId} in version ${meta.version} of store ${meta.store}: route by that version's layout (GET /stores/${meta.store})`,
      },
    },
    { [VERSION_HEADER]: String(meta.version) },
  )
}
