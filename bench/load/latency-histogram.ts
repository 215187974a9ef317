/**
 * Latency histograms of the C load generator (tools/paced-load.c): bucket b holds latencies
 * in [BASE^b, BASE^(b+1)) microseconds. Runs over consecutive seconds are pooled by adding
 * their buckets, so a long phase measured in slices still has one percentile, which a
 * percentile of the slices' percentiles is not.
 */
export type LatencyHistogram = readonly (readonly [bucket: number, count: number])[]

/** The generator's HIST_BASE: a bucket's width is 2% of its lower bound. */
const BASE = 1.02

/** The buckets of all `hists` added up, in bucket order. */
export function pooledHistogram(hists: readonly LatencyHistogram[]): LatencyHistogram {
  const sum = new Map<number, number>()
  for (const h of hists) for (const [b, n] of h) sum.set(b, (sum.get(b) ?? 0) + n)
  return [...sum.entries()].sort((a, b) => a[0] - b[0])
}

/**
 * The `p`th percentile (0-100) in ms: the upper bound of the bucket that holds it, so at most
 * 2% above the exact value and never below it. NaN for an empty histogram.
 */
export function histogramPercentile(h: LatencyHistogram, p: number): number {
  const total = h.reduce((s, [, n]) => s + n, 0)
  if (total === 0) return NaN
  const rank = Math.max(1, Math.ceil((p / 100) * total))
  let seen = 0
  for (const [b, n] of h) {
    seen += n
    if (seen >= rank) return BASE ** (b + 1) / 1000
  }
  return NaN
}
