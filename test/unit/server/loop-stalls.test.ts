import { watchLoopStalls } from '../../../server/loop-stalls'
import { nullLogger, type Logger } from '../../../server/log'

/** The serving loop's stall watch (server/loop-stalls.ts) reports a loop held by synchronous work. */
test('a loop held for 150 ms is logged as a stall of about that long', async () => {
  const stalls: number[] = []
  let seen: () => void = () => undefined
  const logged = new Promise<void>((resolve) => (seen = resolve))
  const log: Logger = {
    ...nullLogger,
    warn: (event, fields) => {
      if (event !== 'event-loop-stall') return
      stalls.push(Number(fields?.['ms']))
      seen()
    },
  }
  const stop = watchLoopStalls(log)
  try {
    // Let the watch take its first look, then hold the loop.
    await new Promise((r) => setTimeout(r, 60))
    const until = performance.now() + 150
    while (performance.now() < until) {
      // busy: nothing else runs on this loop meanwhile
    }
    await logged
    // At least the time held, less the one period the timer may have been due anyway.
    expect(Math.max(...stalls)).toBeGreaterThanOrEqual(150 - 25)
  } finally {
    stop()
  }
})
