import { StoreError } from '../../common/errors'

/** What a node tells about a store's push lease (GET /admin/stores/<store>/lock). */
export interface LeaseView {
  readonly owner: string
  readonly expiresAt: string
  readonly expiresInMs: number
}

/**
 * Per-store leases that make a cluster push exclusive. A push takes the lease on every
 * node in node order, so two pushes of one store meet at the first node and exactly
 * one proceeds. Leases are short and renewed by the live push (a heartbeat), so a push
 * whose process died frees the store within one lease; they live in memory only: a
 * restarted node has no push in flight.
 */
export class PushLocks {
  private readonly leases = new Map<string, { owner: string; expires: number }>()

  constructor(private readonly now: () => number = Date.now) {}

  acquire(store: string, owner: string, ttlMs: number): { owner: string; expiresAt: string } {
    const held = this.leases.get(store)
    const t = this.now()
    if (held && held.expires > t && held.owner !== owner) {
      throw new StoreError(
        'RO_CONFLICT',
        `store ${store} is locked by ${held.owner} for ${Math.ceil((held.expires - t) / 1000)} more seconds`,
      )
    }
    const expires = t + ttlMs
    this.leases.set(store, { owner, expires })
    return { owner, expiresAt: new Date(expires).toISOString() }
  }

  /**
   * Extends a lease its owner still holds. A lease that was broken, taken by another push
   * or forgotten by a restart is not taken again: the push has lost its exclusivity and
   * must learn it (RO_CONFLICT). One that expired untouched is still this owner's.
   */
  renew(store: string, owner: string, ttlMs: number): { owner: string; expiresAt: string } {
    const held = this.leases.get(store)
    if (!held || held.owner !== owner) {
      const by = held && held.expires > this.now() ? ` (now held by ${held.owner})` : ''
      throw new StoreError('RO_CONFLICT', `the lease of ${owner} on store ${store} was lost${by}`)
    }
    return this.acquire(store, owner, ttlMs)
  }

  /** Releasing a lease someone else holds is refused; an expired or absent one is a no-op. */
  release(store: string, owner: string): void {
    const held = this.leases.get(store)
    if (!held || held.expires <= this.now()) {
      this.leases.delete(store)
      return
    }
    if (held.owner !== owner) throw new StoreError('RO_CONFLICT', `store ${store} is locked by ${held.owner}, not ${owner}`)
    this.leases.delete(store)
  }

  /** An operator's break: drops the lease whoever holds it; returns the owner it had, if live. */
  breakLease(store: string): string | undefined {
    const owner = this.holder(store)
    this.leases.delete(store)
    return owner
  }

  holder(store: string): string | undefined {
    return this.view(store)?.owner
  }

  view(store: string): LeaseView | undefined {
    const held = this.leases.get(store)
    const t = this.now()
    if (!held || held.expires <= t) return undefined
    return { owner: held.owner, expiresAt: new Date(held.expires).toISOString(), expiresInMs: held.expires - t }
  }
}
