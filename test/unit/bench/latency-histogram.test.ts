import { histogramPercentile, pooledHistogram, type LatencyHistogram } from '../../../bench/load/latency-histogram'

/** The C generator's bucket of a latency (tools/paced-load.c, hist_bucket). */
const bucketOf = (ms: number): number => (ms * 1000 < 1 ? 0 : Math.floor(Math.log(ms * 1000) / Math.log(1.02)))

function histogramOf(latenciesMs: readonly number[]): LatencyHistogram {
  const counts = new Map<number, number>()
  for (const ms of latenciesMs) counts.set(bucketOf(ms), (counts.get(bucketOf(ms)) ?? 0) + 1)
  return [...counts.entries()].sort((a, b) => a[0] - b[0])
}

describe('latency histograms of the paced load generator', () => {
  test('a percentile is the upper bound of its bucket: never below the exact one, at most 2% above', () => {
    const lat = Array.from({ length: 1000 }, (_, i) => 0.2 + i * 0.05)
    const exact = lat[Math.ceil(0.99 * lat.length) - 1] as number
    const p99 = histogramPercentile(histogramOf(lat), 99)
    expect(p99).toBeGreaterThanOrEqual(exact)
    expect(p99).toBeLessThanOrEqual(exact * 1.02)
  })

  test('pooled slices give the percentile of all their requests, which the worst slice does not', () => {
    // Nine quiet slices and one with a 100 ms stall hitting 2% of its requests.
    const quiet = Array.from({ length: 1000 }, (_, i) => 1 + (i % 10) * 0.1)
    const stalled = quiet.map((ms, i) => (i < 20 ? 100 : ms))
    const slices = [...Array.from({ length: 9 }, () => histogramOf(quiet)), histogramOf(stalled)]
    const pooled = pooledHistogram(slices)
    expect(pooled.reduce((s, [, n]) => s + n, 0)).toBe(10_000)
    expect(histogramPercentile(slices[9] as LatencyHistogram, 99)).toBeGreaterThan(99)
    const p99 = histogramPercentile(pooled, 99)
    expect(p99).toBeGreaterThanOrEqual(1.9)
    expect(p99).toBeLessThan(2)
    // 0.2% of all requests stalled: the p99.9 still sees them.
    expect(histogramPercentile(pooled, 99.9)).toBeGreaterThan(99)
  })

  test('buckets come out in order and an empty histogram has no percentile', () => {
    const pooled = pooledHistogram([histogramOf([5, 1]), histogramOf([3])])
    expect(pooled.map(([b]) => b)).toEqual([...pooled.map(([b]) => b)].sort((a, b) => a - b))
    expect(histogramPercentile([], 99)).toBeNaN()
    expect(histogramPercentile(pooledHistogram([]), 50)).toBeNaN()
  })
})
