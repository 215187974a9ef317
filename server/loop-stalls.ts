import type { Logger } from './log'

/** How often the watch looks, and the lateness it reports. */
const PERIOD_MS = 25
const STALL_MS = 50

/**
 * Logs `event-loop-stall` when this process's event loop did not run for STALL_MS or more:
 * a timer due every PERIOD_MS that fires that late. Every request of the loop waited as
 * long (a synchronous call, a collection, a page fault, the process descheduled), which a
 * request's own latency cannot tell apart from a slow lookup. Returns the stop function.
 */
export function watchLoopStalls(log: Logger): () => void {
  let last = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    const late = now - last - PERIOD_MS
    last = now
    if (late >= STALL_MS) log.warn('event-loop-stall', { ms: Math.round(late) })
  }, PERIOD_MS)
  timer.unref()
  return () => clearInterval(timer)
}
