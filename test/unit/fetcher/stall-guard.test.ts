import { guardPromise, StallError, stallGuard } from '../../../fetcher/transfer/stall-guard'

describe('stallGuard', () => {
  test('fails while the source is still silent, and says so', async () => {
    let stalled: Error | undefined
    let release!: () => void
    const silence = new Promise<void>((r) => (release = r))
    let resumed = false
    async function* src(): AsyncGenerator<Buffer> {
      yield Buffer.from('a')
      await silence
      resumed = true
      yield Buffer.from('b')
    }
    const run = async (): Promise<void> => {
      for await (const b of stallGuard(src(), 100, 'x', (e) => (stalled = e))) void b
    }
    await expect(run()).rejects.toBeInstanceOf(StallError)
    // The guard gave up on its own: the source never spoke again before it did.
    expect(resumed).toBe(false)
    release()
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

describe('guardPromise', () => {
  test('an abort rejects at once with its reason; a value arriving later goes to onLate', async () => {
    let finish!: (v: string) => void
    const slow = new Promise<string>((r) => (finish = r))
    const ac = new AbortController()
    const late: string[] = []
    const guarded = guardPromise(slow, 60_000, 'x', () => undefined, { signal: ac.signal, onLate: (v) => late.push(v) })
    ac.abort(new Error('cancelled'))
    await expect(guarded).rejects.toThrow('cancelled')
    finish('a stream nobody reads')
    await slow
    expect(late).toEqual(['a stream nobody reads'])
  })

  test('a stall calls onStall, rejects with a StallError, and hands the late value to onLate', async () => {
    let finish!: (v: string) => void
    const slow = new Promise<string>((r) => (finish = r))
    const stalls: Error[] = []
    const late: string[] = []
    await expect(guardPromise(slow, 20, 'src', (e) => stalls.push(e), { onLate: (v) => late.push(v) })).rejects.toBeInstanceOf(StallError)
    expect(stalls).toHaveLength(1)
    finish('late')
    await slow
    expect(late).toEqual(['late'])
  })

  test('a value in time is passed through, and onLate is not called', async () => {
    const late: number[] = []
    const ac = new AbortController()
    expect(await guardPromise(Promise.resolve(7), 1000, 'x', () => undefined, { signal: ac.signal, onLate: (v) => late.push(v) })).toBe(7)
    ac.abort()
    await new Promise((r) => setImmediate(r))
    expect(late).toEqual([])
  })
})
