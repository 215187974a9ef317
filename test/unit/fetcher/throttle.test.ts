import { checksumStream } from '../../../fetcher/transfer/checksum-stream'
import { throttle } from '../../../fetcher/transfer/throttle'
import { TokenBucket } from '../../../fetcher/transfer/token-bucket'
import { createFileHasher } from '../../../formats/store/chunk/checksum'

describe('throttle', () => {
  test('splits large buffers to the burst size and keeps every byte in order', async () => {
    const big = Buffer.alloc(1 << 20)
    for (let i = 0; i < big.length; i++) big[i] = i % 251
    async function* src(): AsyncGenerator<Buffer> {
      yield big
    }
    const bucket = new TokenBucket(64 << 20, 100_000)
    const pieces: Buffer[] = []
    for await (const p of throttle(src(), bucket)) pieces.push(p)
    expect(pieces.length).toBe(Math.ceil(big.length / 100_000))
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThanOrEqual(100_000)
    expect(Buffer.concat(pieces).equals(big)).toBe(true)
  })

  test('composes: the slower of two buckets wins, and a hash sees the same bytes', async () => {
    const fast = new TokenBucket(64 << 20)
    const slow = new TokenBucket(1 << 20)
    const data = Buffer.alloc(1 << 20, 7)
    async function* src(): AsyncGenerator<Buffer> {
      for (let at = 0; at < data.length; at += 16 << 10) yield data.subarray(at, at + (16 << 10))
    }
    const direct = await createFileHasher('xxh64')
    direct.update(data)
    const hasher = await createFileHasher('xxh64')
    let seen = 0
    const t0 = performance.now()
    for await (const b of checksumStream(throttle(throttle(src(), fast), slow), hasher, (n) => (seen += n))) void b
    const secs = (performance.now() - t0) / 1000
    expect(seen).toBe(data.length)
    expect(hasher.digest()).toBe(direct.digest())
    const expected = (data.length - slow.burstBytes) / (1 << 20)
    expect(secs).toBeGreaterThan(expected * 0.9)
    expect(secs).toBeLessThan(expected * 1.1 + 0.05)
  })

  test('stopping early runs the source cleanup', async () => {
    let cleaned = false
    async function* src(): AsyncGenerator<Buffer> {
      try {
        for (;;) yield Buffer.alloc(1000)
      } finally {
        cleaned = true
      }
    }
    for await (const b of throttle(src(), new TokenBucket(1 << 30))) {
      void b
      break
    }
    expect(cleaned).toBe(true)
  })

  test('an abort while waiting for tokens ends the stream with RO_ABORTED', async () => {
    async function* src(): AsyncGenerator<Buffer> {
      for (;;) yield Buffer.alloc(64 << 10)
    }
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 50)
    const run = async (): Promise<void> => {
      for await (const b of throttle(src(), new TokenBucket(100_000), ac.signal)) void b
    }
    await expect(run()).rejects.toMatchObject({ code: 'RO_ABORTED' })
  })
})
