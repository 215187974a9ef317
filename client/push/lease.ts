import { StoreError, errorMessage, isStoreError } from '../../common/errors'
import type { ClusterAdmin } from '../cluster-admin'

/** Default push lease: a push whose process died frees the store within this long. */
export const DEFAULT_LEASE_MS = 15_000

/**
 * The push's leases on the nodes, renewed every third of their length while the push is
 * alive. The lease is short so that a push whose process died (kill -9, a closed laptop)
 * stops locking the store within one lease, not after its whole timeout. A node that
 * says the lease was lost (broken by an operator, taken by another push after it lapsed,
 * forgotten by a restart) is remembered; the push checks `lost()` before it changes
 * anything, so it never swaps without holding the store.
 */
export class PushLease {
  readonly held: number[] = []
  private readonly lostOn = new Map<number, string>()
  private timer: NodeJS.Timeout | undefined
  private renewing: Promise<void> = Promise.resolve()

  constructor(
    private readonly admin: ClusterAdmin,
    private readonly store: string,
    readonly owner: string,
    readonly ttlMs: number = DEFAULT_LEASE_MS,
  ) {
    if (!Number.isInteger(ttlMs) || ttlMs < 2000) throw new RangeError('a push lease lasts at least 2000 ms')
  }

  /** Takes the lease on one node (throws what the node said: RO_CONFLICT when another push holds it). */
  async take(id: number): Promise<void> {
    await this.admin.node(id).lock(this.store, this.owner, this.ttlMs)
    this.held.push(id)
    this.timer ??= setInterval(
      () => {
        this.renewing = this.renewAll()
      },
      Math.floor(this.ttlMs / 3),
    )
    // The heartbeat must not keep a finished CLI alive; stop() is called anyway.
    this.timer.unref()
  }

  /** Nodes on which the lease was lost, with what they said. */
  lost(): ReadonlyMap<number, string> {
    return this.lostOn
  }

  /** Refuses to go on once any node lost the lease. */
  assertHeld(step: string): void {
    if (this.lostOn.size === 0) return
    const which = [...this.lostOn].map(([id, why]) => `node ${id}: ${why}`).join('; ')
    throw new StoreError('RO_CONFLICT', `the push lost its lease before ${step} (${which})`)
  }

  /** Stops the heartbeat and releases every lease still held (errors ignored: they lapse anyway). */
  async release(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
    await this.renewing
    await Promise.all(
      this.held.map((id) =>
        this.admin
          .node(id)
          .unlock(this.store, this.owner)
          .catch(() => undefined),
      ),
    )
  }

  private async renewAll(): Promise<void> {
    await Promise.all(
      this.held
        .filter((id) => !this.lostOn.has(id))
        .map(async (id) => {
          try {
            await this.admin.node(id).renewLock(this.store, this.owner, this.ttlMs)
          } catch (err) {
            // An unreachable node is retried at the next beat; only its answer "lost" counts.
            if (isStoreError(err, 'RO_CONFLICT')) this.lostOn.set(id, errorMessage(err))
          }
        }),
    )
  }
}
