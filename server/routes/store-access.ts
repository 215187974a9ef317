import { StoreError } from '../../common/errors'
import type { StoreVersions } from '../../swapper/store-versions'
import type { AppContext } from '../context'

/** The response header naming the version a read was answered from. */
export const VERSION_HEADER = 'X-Rostore-Version'

export function knownStore(ctx: AppContext, store: string): StoreVersions {
  const sv = ctx.dataDir.get(store)
  if (!sv) throw new StoreError('RO_NOT_FOUND', `no store ${store} on this node`)
  return sv
}

export function checkServable(sv: StoreVersions): void {
  if (sv.stale) throw new StoreError('RO_UNAVAILABLE', `store ${sv.store} is marked stale on this node: ${sv.stale.reason}`)
}

export function noLiveVersion(sv: StoreVersions): StoreError {
  return new StoreError('RO_UNAVAILABLE', `store ${sv.store} has no live version on this node${sv.loadError ? ` (${sv.loadError})` : ''}`)
}
