import type { StoreMetadata } from '../../../formats/store/layout/metadata'
import type { ServingReader } from '../../../formats/store/read/store-reader-api'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { LiveStore } from '../../../swapper/live-store'

function fakeReader(version: number): ServingReader & { closed: boolean } {
  const r = {
    dir: `/v${version}`,
    metadata: { version, store: 's' } as unknown as StoreMetadata,
    lastProbes: 0,
    accessMode: 'pread' as const,
    closed: false,
    get(key: Uint8Array | string) {
      if (r.closed) throw new Error('read after close')
      return Buffer.from(`v${version}:${String(key)}`)
    },
    getMany(keys: readonly (Uint8Array | string)[]) {
      return keys.map((k) => r.get(k))
    },
    getStored(key: Uint8Array | string) {
      return r.get(key)
    },
    getManyStored(keys: readonly (Uint8Array | string)[]) {
      return keys.map((k) => r.get(k))
    },
    storedValues: () => ({ compression: 'none' as const }),
    getManyFramed(): Buffer {
      throw new Error('not used here')
    },
    getManyFramedInto(): number {
      throw new Error('not used here')
    },
    getFramedInto(): boolean {
      throw new Error('not used here')
    },
    getAsync(): Promise<Buffer | undefined> {
      throw new Error('not used here')
    },
    getManyAsync(): Promise<(Buffer | undefined)[]> {
      throw new Error('not used here')
    },
    warm: () => undefined,
    residency: () => undefined,
    close() {
      if (r.closed) throw new Error('closed twice')
      r.closed = true
    },
  }
  return r
}

describe('LiveStore', () => {
  test('empty store gives no lease', () => {
    expect(new LiveStore('s').acquire()).toBeUndefined()
  })

  test('replace closes the old reader only after its leases are released', async () => {
    const live = new LiveStore('s')
    const r1 = fakeReader(1)
    const r2 = fakeReader(2)
    void live.replace(r1)
    const a = live.acquire()!
    const b = live.acquire()!
    expect(a.version).toBe(1)
    const drained = live.replace(r2)
    // New requests see version 2 at once.
    const c = live.acquire()!
    expect(c.version).toBe(2)
    expect(live.version).toBe(2)
    // In-flight requests still read version 1.
    expect(a.reader.get('k')!.toString()).toBe('v1:k')
    expect(r1.closed).toBe(false)
    expect(live.retiringCount).toBe(1)
    a.release()
    a.release() // idempotent
    expect(r1.closed).toBe(false)
    b.release()
    expect(r1.closed).toBe(true)
    await drained
    expect(live.retiringCount).toBe(0)
    c.release()
    expect(r2.closed).toBe(false)
    await live.close()
    expect(r2.closed).toBe(true)
  })

  test('a replaced reader without leases closes at once', async () => {
    const live = new LiveStore('s')
    const r1 = fakeReader(1)
    void live.replace(r1)
    await live.replace(fakeReader(2))
    expect(r1.closed).toBe(true)
  })

  test('many swaps under interleaved leases: every lease reads one live reader', async () => {
    const live = new LiveStore('s')
    const readers = Array.from({ length: 50 }, (_, i) => fakeReader(i + 1))
    void live.replace(readers[0])
    const held: { release(): void; reader: ServingReader }[] = []
    for (let i = 1; i < readers.length; i++) {
      for (let j = 0; j < 3; j++) held.push(live.acquire()!)
      void live.replace(readers[i])
      // release some of the older leases, in random order
      while (held.length > 4) held.splice(Math.floor(Math.random() * held.length), 1)[0]!.release()
      for (const h of held) expect(() => h.reader.get('x')).not.toThrow()
    }
    for (const h of held) h.release()
    await live.drained()
    expect(readers.slice(0, -1).every((r) => r.closed)).toBe(true)
    expect(readers[readers.length - 1]!.closed).toBe(false)
  })

  test('replaced readers become unreachable once closed (a reader never keeps its predecessor alive)', async () => {
    // Collections on demand inside jest: the flag is set at run time, gc comes from a fresh context.
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const live = new LiveStore('s')
    const gone = new Set<number>()
    const registry = new FinalizationRegistry<number>((v) => gone.add(v))
    for (let v = 1; v <= 30; v++) {
      const r = fakeReader(v)
      registry.register(r, v)
      await live.replace(r)
    }
    await live.drained()
    for (let round = 0; round < 10 && gone.size < 29; round++) {
      gc()
      await new Promise((resolve) => setImmediate(resolve))
    }
    // Every reader but the live one (30) was collected.
    expect([...gone].sort((a, b) => a - b)).toEqual(Array.from({ length: 29 }, (_, i) => i + 1))
    expect(live.version).toBe(30)
  })
})
