import { throttle } from '../../../fetcher/transfer/throttle'
import { TokenBucket } from '../../../fetcher/transfer/token-bucket'

async function* chunks(count: number, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < count; i++) yield Buffer.alloc(size, i)
}

async function drain(src: AsyncIterable<Buffer>): Promise<number> {
  let n = 0
  for await (const b of src) n += b.length
  return n
}

describe('TokenBucket', () => {
  test('default burst is rate/20, at least 64 KiB', () => {
    expect(new TokenBucket(1 << 20).burstBytes).toBe(64 << 10)
    expect(new TokenBucket(100e6).burstBytes).toBe(5e6)
    expect(new TokenBucket(1000, 10).burstBytes).toBe(10)
    expect(() => new TokenBucket(0)).toThrow(RangeError)
    expect(() => new TokenBucket(NaN)).toThrow(RangeError)
  })

  test('holds a single taker to the rate (after the initial burst)', async () => {
    const rate = 2 << 20 // 2 MiB/s
    const bucket = new TokenBucket(rate)
    const t0 = performance.now()
    const bytes = await drain(throttle(chunks(64, 32 << 10), bucket)) // 2 MiB
    const secs = (performance.now() - t0) / 1000
    const expected = (bytes - bucket.burstBytes) / rate
    expect(secs).toBeGreaterThan(expected * 0.9)
    expect(secs).toBeLessThan(expected * 1.1 + 0.05)
  })

  test('concurrent takers share one rate', async () => {
    const rate = 4 << 20
    const bucket = new TokenBucket(rate)
    const t0 = performance.now()
    const sizes = await Promise.all([0, 1, 2, 3].map(() => drain(throttle(chunks(32, 32 << 10), bucket))))
    const secs = (performance.now() - t0) / 1000
    const total = sizes.reduce((a, b) => a + b, 0) // 4 MiB
    const expected = (total - bucket.burstBytes) / rate
    expect(secs).toBeGreaterThan(expected * 0.9)
    expect(secs).toBeLessThan(expected * 1.1 + 0.05)
  })

  test('abort rejects a waiting take with RO_ABORTED and refunds it', async () => {
    const bucket = new TokenBucket(100_000, 1000)
    await bucket.take(1000)
    const ac = new AbortController()
    const waiting = bucket.take(100_000, ac.signal) // would wait ~1 s
    setTimeout(() => ac.abort(), 20)
    const t0 = performance.now()
    await expect(waiting).rejects.toMatchObject({ code: 'RO_ABORTED' })
    expect(performance.now() - t0).toBeLessThan(500)
    // The refund means the next small take does not pay for the aborted one.
    const t1 = performance.now()
    await bucket.take(500)
    expect(performance.now() - t1).toBeLessThan(100)
  })

  test('setRate applies to the next takes', async () => {
    const bucket = new TokenBucket(1000, 1000)
    bucket.setRate(10 << 20)
    const t0 = performance.now()
    await drain(throttle(chunks(16, 64 << 10), bucket)) // 1 MiB at 10 MiB/s ≈ 0.1 s minus the burst
    expect(performance.now() - t0).toBeLessThan(400)
  })
})
