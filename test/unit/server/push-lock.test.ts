import { isStoreError } from '../../../common/errors'
import { PushLocks } from '../../../server/peers/push-lock'

/** The push lease on a node: exclusive, renewed only by its holder, lapsing, breakable. */
function clock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000_000
  return { now: () => t, advance: (ms) => (t += ms) }
}

test('a lease is exclusive until it lapses, then another push takes it', () => {
  const c = clock()
  const locks = new PushLocks(c.now)
  locks.acquire('st', 'push-a', 15_000)
  expect(() => locks.acquire('st', 'push-b', 15_000)).toThrow(/locked by push-a for 15 more seconds/)
  c.advance(15_001)
  expect(locks.holder('st')).toBeUndefined()
  expect(locks.acquire('st', 'push-b', 15_000).owner).toBe('push-b')
})

test('renewing keeps the lease alive past its first length', () => {
  const c = clock()
  const locks = new PushLocks(c.now)
  locks.acquire('st', 'push-a', 15_000)
  for (let i = 0; i < 10; i++) {
    c.advance(5000)
    locks.renew('st', 'push-a', 15_000)
  }
  expect(locks.view('st')).toEqual({ owner: 'push-a', expiresAt: new Date(c.now() + 15_000).toISOString(), expiresInMs: 15_000 })
  expect(() => locks.acquire('st', 'push-b', 15_000)).toThrow(/locked by push-a/)
})

test('a lease broken by an operator or taken by another push is lost: renewing it is refused', () => {
  const c = clock()
  const locks = new PushLocks(c.now)
  locks.acquire('st', 'push-a', 15_000)
  expect(locks.breakLease('st')).toBe('push-a')
  expect(locks.breakLease('st')).toBeUndefined()
  let err: unknown
  try {
    locks.renew('st', 'push-a', 15_000)
  } catch (e) {
    err = e
  }
  expect(isStoreError(err, 'RO_CONFLICT')).toBe(true)
  locks.acquire('st', 'push-b', 15_000)
  expect(() => locks.renew('st', 'push-a', 15_000)).toThrow(/lost \(now held by push-b\)/)
})

test('a lapsed lease nobody took is still its owner to renew; other stores are independent', () => {
  const c = clock()
  const locks = new PushLocks(c.now)
  locks.acquire('st', 'push-a', 15_000)
  locks.acquire('other', 'push-b', 15_000)
  c.advance(20_000)
  expect(locks.renew('st', 'push-a', 15_000).owner).toBe('push-a')
  expect(locks.holder('st')).toBe('push-a')
  expect(locks.holder('other')).toBeUndefined()
})
