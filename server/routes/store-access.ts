import type { StoreVersions } from '../../swapper/store-versions'
import { StoreError } from '../../common/errors'
import type { AppContext, ReadContext } from '../context'
import type { ServedStore } from '../../swapper/served-store'
import type { ServingMirror } from '../../swapper/serving-mirror'

/** The response header naming the version a read was answered from. */
export const VERSION_HEADER = 'X-Rostore-Version'

/** A store as the read routes see it; RO_NOT_FOUND when the node has none of that name. */
export function servedStore(ctx: ReadContext, store: string): ServedStore {
  const sv = ctx.stores.get(store)
  if (!sv) throw new StoreError('RO_NOT_FOUND', `no store ${store} on this node`)
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

export function noLiveVersion(sv: ServedStore): StoreError {
  return new StoreError('RO_UNAVAILABLE', `store ${sv.store} has no live version on this node${sv.loadError ? ` (${sv.loadError})` : ''}`)
}
