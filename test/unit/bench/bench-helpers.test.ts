import { fetchGoals, parseTables, soakGoals, swapGoals } from '../../../bench/kit/external'
import {
  ABSENT_FRACTION,
  keyOf,
  label,
  parseCount,
  permutation,
  uniformIds,
  valueOf,
  writeKey,
  zipfCdf,
  zipfIds,
} from '../../../bench/kit/data'
import { fmt, mdTable, median, percentile, summarize } from '../../../bench/kit/stats'

describe('bench stats', () => {
  test('percentiles interpolate between closest ranks', () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2.5)
    expect(percentile([5], 99)).toBe(5)
    expect(percentile([], 50)).toBeNaN()
    expect(percentile([3, 1, 2], 0)).toBe(1)
    expect(percentile([3, 1, 2], 100)).toBe(3)
    expect(median([9, 1, 5])).toBe(5)
  })

  test('summarize gives median, range and spread, ignoring non-finite runs', () => {
    const s = summarize([10, 12, NaN, 8])
    expect(s).toEqual({ n: 3, median: 10, min: 8, max: 12, spread: 0.4 })
    expect(summarize([]).n).toBe(0)
  })

  test('fmt keeps about three significant digits', () => {
    expect(fmt(1234567)).toBe('1,234,567')
    expect(fmt(12.345)).toBe('12.3')
    expect(fmt(0.012345)).toBe('0.0123')
    expect(fmt(NaN)).toBe('n/a')
  })

  test('mdTable escapes pipes and aligns', () => {
    expect(mdTable(['a', 'b'], [['x|y', '1']])).toBe('| a | b |\n|---|---:|\n| x\\|y | 1 |')
  })
})

describe('bench data', () => {
  test('keys are 12 zero-padded digits, as redis-benchmark __rand_int__', () => {
    expect(keyOf(42)).toBe('000000000042')
    const b = Buffer.alloc(12)
    writeKey(b, 0, 987654321)
    expect(b.toString()).toBe(keyOf(987654321))
  })

  test('values are deterministic, printable and free of tab and newline', () => {
    const v = valueOf(7, 1024, 1)
    expect(v.equals(valueOf(7, 1024, 1))).toBe(true)
    expect(v.equals(valueOf(8, 1024, 1))).toBe(false)
    for (const byte of v) {
      expect(byte).toBeGreaterThanOrEqual(0x20)
      expect(byte).toBeLessThanOrEqual(0x7e)
    }
  })

  test('permutation is a permutation', () => {
    const p = permutation(1000, 3)
    expect([...p].sort((a, b) => a - b)).toEqual(Array.from({ length: 1000 }, (_, i) => i))
  })

  test('uniform stream has about 10% absent keys', () => {
    const ids = uniformIds(10_000, 50_000, 1)
    const absent = ids.filter((i) => i >= 10_000).length / ids.length
    expect(Math.abs(absent - ABSENT_FRACTION)).toBeLessThan(0.01)
    expect(Math.max(...ids)).toBeLessThan(20_000)
  })

  test('zipf stream is skewed and stays in range', () => {
    const cdf = zipfCdf(1000, 0.99)
    expect(cdf[999]).toBe(1)
    for (let i = 1; i < 1000; i++) expect(cdf[i]!).toBeGreaterThan(cdf[i - 1]!)
    const ids = zipfIds(1000, 20_000, 0.99, 5)
    const counts = new Map<number, number>()
    for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1)
    const top = Math.max(...counts.values())
    // rank 1 of Zipf(0.99) over 1000 has probability ~0.13
    expect(top / ids.length).toBeGreaterThan(0.09)
    expect(Math.max(...ids)).toBeLessThan(1000)
  })

  test('record counts parse with k/M suffixes and print back', () => {
    expect(parseCount('100k')).toBe(100_000)
    expect(parseCount('10M')).toBe(10_000_000)
    expect(parseCount('2500000')).toBe(2_500_000)
    expect(() => parseCount('ten')).toThrow()
    expect(label(1_000_000)).toBe('1M')
    expect(label(100_000)).toBe('100k')
  })
})

describe('goal rows read back from the external benchmarks', () => {
  const fetchMd = [
    'Fetch benchmark: 134 MB',
    '',
    '| measurement | MB | seconds | MB/s | note |',
    '|---|---:|---:|---:|---|',
    '| fetchVersion, 4 parallel, verify + fsync | 134 | 0.36 | 372 |  |',
    '| curl --parallel-max 4, no fsync | 134 | 0.27 | 499 | x |',
    '| curl --parallel-max 4 + fsync | 134 | 0.51 | 262 | x |',
    '| throttled to 10 MB/s (node bucket, 5 s) | 50 | 5.00 | 10 | 0.7% off target |',
    '| throttled to 100 MB/s (node bucket, 5 s) | 496 | 5.03 | 99 | -11.4% off target |',
  ].join('\n')

  test('parseTables finds header and rows', () => {
    const [t] = parseTables(fetchMd)
    expect(t?.header).toEqual(['measurement', 'MB', 'seconds', 'MB/s', 'note'])
    expect(t?.rows).toHaveLength(5)
  })

  test('fetch goal compares with curl at the same parallelism plus fsync; throttle uses the worst rate', () => {
    const [fetch, throttle] = fetchGoals(fetchMd)
    expect(fetch?.status).toBe('met')
    expect(fetch?.measured).toMatch(/^1\.42×/)
    expect(throttle?.status).toBe('missed')
    expect(fetchGoals(undefined, 'no nginx').every((g) => g.status === 'not run')).toBe(true)
  })

  test('swap goal is judged on the round-trip p99', () => {
    const md = [
      '| op | store | data MiB | records | server p50 | server p99 | flip p50 | flip p99 | rtt p50 | rtt p99 |',
      '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
      '| swap | small | 1.4 | 10000 | 2.76 | 4.99 | 1.17 | 3.16 | 6.07 | 9.10 |',
      '| rollback | big | 512.0 | 512 | 6.94 | 8.00 | 5.02 | 4.89 | 8.13 | 12.11 |',
    ].join('\n')
    expect(swapGoals(md)[0]?.status).toBe('missed')
    expect(swapGoals(md.replace('12.11', '9.99'))[0]?.status).toBe('met')
    // Without a reads-during-swaps table that row is "not run", never met.
    expect(swapGoals(md)[1]?.status).toBe('not run')
  })

  test('reads during swaps and the push soak are read back from their goal rows', () => {
    const reads = [
      '| goal | target | measured | status |',
      '|---|---|---|---|',
      '| reads during swaps: p99 | ≤ 1.5 × baseline + 0.1 ms (1.26 ms) | 13.0 ms, 0 errors | missed |',
    ].join('\n')
    const swapMd = ['| op | store | rtt p99 |', '|---|---|---:|', '| swap | small | 3.00 |', '', reads].join('\n')
    const [, swapReads] = swapGoals(swapMd)
    expect(swapReads?.status).toBe('missed')
    expect(swapReads?.measured).toBe('13.0 ms, 0 errors')
    expect(swapGoals(swapMd.replace('| missed |', '| met |'))[1]?.status).toBe('met')
    const soak = [
      '| goal | target | measured | status |',
      '|---|---|---|---|',
      '| push soak: memory and files flat after warm-up | RssAnon +≤ 16 MiB | RssAnon +88 MiB, 0 worker restarts | missed |',
    ].join('\n')
    expect(soakGoals(soak)[0]?.status).toBe('missed')
    expect(soakGoals(soak.replace('| missed |', '| met |'))[0]?.status).toBe('met')
    expect(soakGoals(undefined, 'not built')[0]?.status).toBe('not run')
  })
})
