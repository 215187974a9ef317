import { readFileSync } from 'node:fs'

/**
 * A test-only fault: slow disk writes. When the environment variable
 * ROSTORE_TEST_SLOW_DISK names a file, every durable step that calls this (directory
 * fsyncs and atomic file writes of the swapper and the decision file, the fetcher's last
 * fsyncs) first waits while that file holds a number of milliseconds larger than the time
 * waited so far (re-read every 50 ms, so a test can slow one node's disk and release it
 * while the node runs), and says so once on stderr (`slow-disk-wait`). No flag or config
 * key sets it; unset, each call costs one comparison.
 */
const control = process.env.ROSTORE_TEST_SLOW_DISK

export function slowDiskDelay(): Promise<void> | undefined {
  if (control === undefined || wanted() <= 0) return undefined
  process.stderr.write(`${JSON.stringify({ ts: new Date().toISOString(), level: 'warn', event: 'slow-disk-wait', ms: wanted() })}\n`)
  const t0 = Date.now()
  return new Promise((resolve) => {
    const tick = (): void => {
      if (Date.now() - t0 >= wanted()) resolve()
      else setTimeout(tick, 50)
    }
    setTimeout(tick, 50)
  })
}

function wanted(): number {
  try {
    return Math.min(Number.parseInt(readFileSync(control as string, 'utf8'), 10) || 0, 600_000)
  } catch {
    return 0
  }
}
