/**
 * When retired mappings are handed back to the kernel.
 *
 * V8 does not count mapped windows as memory (native/memory/unaccounted-window.cc), so nothing
 * makes it collect a closed reader's windows soon; until it does, a retired version stays
 * mapped, its deleted files' disk blocks included. Asking for a collection at every
 * close is too much: each one ends in a full pause of every serving thread, and
 * during a burst of swaps (rollback drills, a push of many stores) those pauses were most
 * of the read latency. So closes within RELEASE_DELAY_MS share one request, made that long
 * after the first of them; the timer never keeps a process alive.
 */
import type { StoreOps } from './store-ops'

export const RELEASE_DELAY_MS = 2_000

let pending: NodeJS.Timeout | undefined

/** Asks for one collection RELEASE_DELAY_MS from now, unless one is already asked for. */
export function releaseMappingsSoon(ops: StoreOps): void {
  if (pending) return
  pending = setTimeout(() => {
    pending = undefined
    ops.releaseMappings()
  }, RELEASE_DELAY_MS)
  pending.unref()
}
