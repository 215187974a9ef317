import { ProgressTracker, type FetchProgress } from '../../../fetcher/transfer/progress'

describe('ProgressTracker', () => {
  beforeEach(() => jest.useFakeTimers())
  afterEach(() => jest.useRealTimers())

  test('rate over a moving window, ETA, and rate-limited callbacks', () => {
    const seen: FetchProgress[] = []
    const p = new ProgressTracker(
      [
        { name: '0.data', size: 10_000 },
        { name: '0.index', size: 1000 },
      ],
      (s) => seen.push(s),
      200,
    )
    p.setState('0.data', 'active')
    for (let i = 0; i < 10; i++) {
      jest.advanceTimersByTime(100)
      p.addBytes('0.data', 500) // 5000 B/s
    }
    // 11 changes in 1 s, at most one callback per 200 ms.
    expect(seen.length).toBeLessThanOrEqual(6)
    const s = p.snapshot()
    expect(s.bytesDone).toBe(5000)
    expect(s.bytesTotal).toBe(11_000)
    expect(s.rateBytesPerSec).toBeCloseTo(5000, -2)
    expect(s.etaSeconds).toBeCloseTo(6000 / 5000, 0)
    expect(s.files[0]).toMatchObject({ name: '0.data', state: 'active', bytesDone: 5000 })
    // A restart after a checksum failure resets the file, and the counts show it.
    p.checksumFailure()
    p.retry('0.data')
    p.setBytes('0.data', 0)
    expect(p.snapshot()).toMatchObject({ bytesDone: 0, retries: 1, checksumFailures: 1 })
    expect(p.snapshot().files[0]?.retries).toBe(1)
    // Silence for longer than the window: the rate falls to zero and the ETA is unknown.
    jest.advanceTimersByTime(6000)
    p.snapshot()
    jest.advanceTimersByTime(200)
    expect(p.snapshot()).toMatchObject({ rateBytesPerSec: 0, etaSeconds: null })
  })

  test('final() always reports, and a throwing listener is ignored', () => {
    let calls = 0
    const p = new ProgressTracker([{ name: '0.data', size: 1 }], () => {
      calls++
      throw new Error('listener bug')
    })
    p.addBytes('0.data', 1)
    p.final()
    expect(calls).toBe(2)
  })
})
