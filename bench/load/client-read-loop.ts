import { performance } from 'node:perf_hooks'
import type { StoreClient } from '../../client/store-client'

/**
 * Single-key gets through a routing client, one at a time, at pseudo-random keys of
 * `keyOf(0..records-1)`, until `stop.done` (bounded in count): each latency in ms. The
 * version benches run it before and during a push to compare the reads' p99.
 */
export async function clientReadLoop(
  client: StoreClient,
  records: number,
  keyOf: (i: number) => string,
  stop: { readonly done: boolean },
): Promise<number[]> {
  const lat: number[] = []
  let x = 777
  for (let n = 0; n < 5_000_000 && !stop.done; n++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    const t0 = performance.now()
    await client.get(keyOf(x % records))
    lat.push(performance.now() - t0)
  }
  return lat
}
