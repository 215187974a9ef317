import { StallError, stallGuard } from '../../../fetcher/stall-guard'

describe('stallGuard', () => {
  test('fails when the source is silent longer than the timeout, and says so', async () => {
    let stalled: Error | undefined
    async function* src(): AsyncGenerator<Buffer> {
      yield Buffer.from('a')
      await new Promise((r) => setTimeout(r, 1000))
      yield Buffer.from('b')
    }
    const run = async (): Promise<void> => {
      for await (const b of stallGuard(src(), 100, 'x', (e) => (stalled = e))) void b
    }
    const t0 = performance.now()
    await expect(run()).rejects.toBeInstanceOf(StallError)
    expect(performance.now() - t0).toBeLessThan(600)
    expect(stalled?.message).toContain('no data for 100 ms')
  })

  test('time spent by a slow consumer does not count', async () => {
    async function* src(): AsyncGenerator<Buffer> {
      for (let i = 0; i < 3; i++) yield Buffer.from('a')
    }
    let n = 0
    for await (const b of stallGuard(src(), 50, 'x', () => undefined)) {
      n += b.length
      await new Promise((r) => setTimeout(r, 120))
    }
    expect(n).toBe(3)
  })
})
