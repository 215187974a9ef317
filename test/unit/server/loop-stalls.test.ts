import { watchLoopStalls } from '../../../server/loop-stalls'
import { nullLogger, type Logger } from '../../../server/log'

/** The serving loop's stall watch (server/loop-stalls.ts) reports a loop held by synchronous work. */
test('a loop held for 150 ms is logged as a stall of about that long', async () => {
  // Only the first stall logged after the hold starts counts: on a loaded machine the wait
  // before it may see a stall of its own.
  let seen: ((ms: number) => void) | undefined
  const log: Logger = {
    ...nullLogger,
    warn: (event, fields) => {
      if (event === 'event-loop-stall') seen?.(Number(fields?.['ms']))
    },
  }
  const stop = watchLoopStalls(log)
  try {
    // Let the watch take its first look, then hold the loop.
    await new Promise((r) => setTimeout(r, 60))
    const logged = new Promise<number>((resolve) => (seen = resolve))
    const until = performance.now() + 150
    while (performance.now() < until) {
      // busy: nothing else runs on this loop meanwhile
    }
    // At least the time held, less the one period the timer may have been due anyway.
    expect(await logged).toBeGreaterThanOrEqual(150 - 25)
  } finally {
    stop()
  }
})
