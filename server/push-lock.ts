import { StoreError } from '../common/errors'

/**
 * Per-store leases that make a cluster push exclusive. A push takes the lease on every
 * node in node order, so two pushes of one store meet at the first node and exactly
 * one proceeds. Leases expire (a push client that died must not block the store
 * forever) and live in memory only: a restarted node has no push in flight.
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

  holder(store: string): string | undefined {
    const held = this.leases.get(store)
    return held && held.expires > this.now() ? held.owner : undefined
  }
}
