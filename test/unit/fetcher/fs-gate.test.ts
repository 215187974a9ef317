import { defaultFsCallLimit, FsGate } from '../../../fetcher/transfer/fs-gate'

/** A call the test finishes by hand, standing for a syscall stuck in the kernel. */
function stuckCall<T>(): { promise: Promise<T>; finish: (v: T) => void; fail: (e: Error) => void } {
  let finish!: (v: T) => void
  let fail!: (e: Error) => void
  const promise = new Promise<T>((res, rej) => {
    finish = res
    fail = rej
  })
  return { promise, finish, fail }
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r))

describe('FsGate', () => {
  test('the default node-wide limit stays below the libuv pool', () => {
    expect([1, 2, 4, 8, 16].map((pool) => defaultFsCallLimit(pool))).toEqual([1, 1, 2, 4, 8])
  })

  test('at most `limit` calls run; the others wait their turn in order', async () => {
    const gate = new FsGate(2)
    const calls = [stuckCall<number>(), stuckCall<number>(), stuckCall<number>()]
    const started: number[] = []
    const never = new AbortController().signal
    const runs = calls.map((c, i) =>
      gate.run(() => {
        started.push(i)
        return c.promise
      }, never),
    )
    await tick()
    expect(started).toEqual([0, 1])
    expect(gate.stats).toMatchObject({ inFlight: 2, waiting: 1, abandoned: 0 })
    calls[0]!.finish(10)
    expect(await runs[0]).toBe(10)
    await tick()
    expect(started).toEqual([0, 1, 2])
    calls[1]!.fail(new Error('EIO'))
    await expect(runs[1]).rejects.toThrow('EIO')
    calls[2]!.finish(12)
    expect(await runs[2]).toBe(12)
    expect(gate.stats).toMatchObject({ inFlight: 0, waiting: 0 })
  })

  test('a child gate allows one call at a time, within the parent', async () => {
    const node = new FsGate(2)
    const fetchA = node.child()
    const fetchB = node.child()
    const never = new AbortController().signal
    const a1 = stuckCall<string>()
    const a2 = stuckCall<string>()
    const b1 = stuckCall<string>()
    const started: string[] = []
    const run = (g: FsGate, name: string, c: { promise: Promise<string> }): Promise<string> =>
      g.run(() => {
        started.push(name)
        return c.promise
      }, never)
    const ra1 = run(fetchA, 'a1', a1)
    const ra2 = run(fetchA, 'a2', a2)
    const rb1 = run(fetchB, 'b1', b1)
    await tick()
    expect(started).toEqual(['a1', 'b1'])
    expect(node.stats.inFlight).toBe(2)
    a1.finish('a1')
    await ra1
    await tick()
    expect(started).toEqual(['a1', 'b1', 'a2'])
    a2.finish('a2')
    b1.finish('b1')
    expect(await Promise.all([ra2, rb1])).toEqual(['a2', 'b1'])
    expect(node.stats).toMatchObject({ inFlight: 0, abandoned: 0 })
  })

  test('an abort answers the caller at once; the stuck call keeps its slot and its late value is cleaned up', async () => {
    const gate = new FsGate(1)
    const stuck = stuckCall<{ fd: number }>()
    const ac = new AbortController()
    const late: { fd: number }[] = []
    const run = gate.run(
      () => stuck.promise,
      ac.signal,
      (v) => late.push(v),
    )
    await tick()
    ac.abort(new Error('cancelled by the operator'))
    await expect(run).rejects.toThrow('cancelled by the operator')
    // The call is still in the kernel: it holds the slot, counted as abandoned.
    expect(gate.stats).toMatchObject({ inFlight: 1, abandoned: 1 })
    // A new caller waits for that slot, and can give up waiting too.
    const waiting = new AbortController()
    let ran = false
    const next = gate.run(async () => (ran = true), waiting.signal)
    await tick()
    expect(gate.stats.waiting).toBe(1)
    waiting.abort()
    await expect(next).rejects.toMatchObject({ name: 'AbortError' })
    expect(gate.stats.waiting).toBe(0)
    expect(ran).toBe(false)
    // The stuck call returns: its value goes to the clean-up, the slot is free again.
    stuck.finish({ fd: 42 })
    await tick()
    expect(late).toEqual([{ fd: 42 }])
    expect(gate.stats).toMatchObject({ inFlight: 0, abandoned: 0 })
    expect(await gate.run(async () => 'free', new AbortController().signal)).toBe('free')
  })

  test('an aborted signal never starts the call', async () => {
    const gate = new FsGate(1)
    const ac = new AbortController()
    ac.abort()
    let ran = false
    await expect(gate.run(async () => (ran = true), ac.signal)).rejects.toMatchObject({ name: 'AbortError' })
    expect(ran).toBe(false)
    expect(() => new FsGate(0)).toThrow(RangeError)
  })
})
