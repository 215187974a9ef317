import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LOOKUP_COLD, LOOKUP_HIT, LOOKUP_MISS, nativeFunctions, type LookupChunkSpec } from '../../../../common/native'
import { HEADER_SIZE, INDEX_ENTRY_SIZE } from '../../../../formats/store/chunk/header'
import { mergeResidency } from '../../../../formats/store/read/residency'
import type { StoreOps } from '../../../../formats/store/read/store-ops'
import { jsStoreOps } from '../../../../testkit/js-twins/store-ops'
import { openStore, type StoreReader } from '../../../../formats/store/read/store-reader'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { evictTree } from '../../../../testkit/stores/page-cache'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * Cold reads (formats/store/read/residency.ts): a lookup asked with `cold` answers LOOKUP_COLD
 * for a record whose pages the residency vector does not mark, reading nothing of it; the
 * async reads bring such records in on the libuv pool and answer the right values, with
 * the data really evicted from the page cache.
 */
const tmp = makeTmp()
afterAll(tmp.cleanup)

const native = nativeFunctions()
const IMPLS: [string, StoreOps][] = [...(native ? [['native', native] as [string, StoreOps]] : []), ['js', jsStoreOps]]
const N = 3000
const keyOf = (i: number): string => `key-${i}`
const valueOf = (i: number): string => `v${i}|${'x'.repeat(700 + (i % 600))}`

async function store(records = N): Promise<string> {
  const dir = tmp.fresh()
  await makeNodeDir(
    dir,
    Array.from({ length: records }, (_, i): [string, string] => [keyOf(i), valueOf(i)]),
    { chunks: 2 },
  )
  return dir
}

describe.each(IMPLS)('lookups with a residency vector (%s)', (_name, ops) => {
  test('cold: nothing marked answers LOOKUP_COLD with the record; marked answers as without the flag', async () => {
    const dir = await store()
    const chunks: (LookupChunkSpec & { vec: Uint8Array })[] = []
    for (let c = 0; c < 2; c++) {
      const index = await ops.mapFile(join(dir, `${c}.index`), false, 65536)
      const data = await ops.mapFile(join(dir, `${c}.data`), true, 65536)
      const vec = new Uint8Array(Math.ceil(data.size / 4096))
      const count = (index.size - HEADER_SIZE) / INDEX_ENTRY_SIZE
      chunks.push({
        index: index.windows,
        count,
        data: data.windows,
        dataSize: data.size,
        radix: null,
        radixBits: 0,
        resident: vec,
        indexCrcs: null,
        vec,
      })
    }
    const key = Buffer.alloc(64)
    const out = new Float64Array(8)
    const lookup = ops.createLookup({ chunks, key, out, binary: false, checkCrc: true, collideBits: -1 })
    for (const i of [0, 17, 1234, N - 1]) {
      const len = key.write(keyOf(i))
      expect(lookup.get(len)).toBe(LOOKUP_HIT)
      const [chunk, valueOffset, valueLength] = [out[0], out[1], out[2]]
      const recordOffset = out[4] as number
      // Not marked: cold, its header not read (length 0).
      expect(lookup.get(len, true)).toBe(LOOKUP_COLD)
      expect([out[0], out[4], out[2]]).toEqual([chunk, recordOffset, 0])
      // Only the header's page marked: cold, with the whole record's length.
      const vec = (chunks[chunk as number] as { vec: Uint8Array }).vec
      vec[Math.floor(recordOffset / 4096)] = 1
      const recordEnd = (valueOffset as number) + (valueLength as number)
      const lastPage = Math.floor((recordEnd - 1) / 4096)
      if (lastPage > Math.floor(recordOffset / 4096)) {
        expect(lookup.get(len, true)).toBe(LOOKUP_COLD)
        expect(out[2]).toBe(recordEnd - recordOffset)
      }
      for (let p = Math.floor(recordOffset / 4096); p <= lastPage; p++) vec[p] = 1
      expect(lookup.get(len, true)).toBe(LOOKUP_HIT)
      expect([out[0], out[1], out[2]]).toEqual([chunk, valueOffset, valueLength])
    }
    // A miss stays a miss: the index alone decides it.
    expect(lookup.get(key.write('absent-key'), true)).toBe(LOOKUP_MISS)

    // getMany: cold keys give the record offset and the bytes known; frame() refuses them.
    for (const c of chunks) c.vec.fill(0)
    const keys = Buffer.from([keyOf(5), keyOf(6)].join(''))
    const ends = new Uint32Array([keyOf(5).length, keys.length])
    const res = new Float64Array(8)
    lookup.getMany(keys, ends, 2, res, true)
    expect([res[0], res[4]]).toEqual([LOOKUP_COLD, LOOKUP_COLD])
    expect(() => lookup.frame(res, 2, Buffer.alloc(65536), 0, true, Buffer.from('$-1\r\n'), Buffer.from('\r\n'))).toThrow(
      /neither a hit nor a miss/,
    )
    lookup.getMany(keys, ends, 2, res)
    expect([res[0], res[4]]).toEqual([LOOKUP_HIT, LOOKUP_HIT])
    lookup.close()
  })
})

/** Readers over a store whose files were evicted before they opened. */
const describeNative = native ? describe : describe.skip
/** Both warm-up paths where this machine has them: the addon's io_uring and the libuv pool. */
const IOS = native?.uringProbe() === 0 ? ['uring', 'pool'] : ['pool']

describeNative.each(IOS)('a store read cold (the addon, its files evicted from the page cache; ROSTORE_COLD_IO=%s)', (io) => {
  let dir: string
  beforeAll(async () => {
    dir = await store(20_000)
  })
  afterAll(() => {
    delete process.env['ROSTORE_COLD_IO']
  })

  async function coldReader(): Promise<StoreReader> {
    expect(evictTree(dir)).toBeGreaterThan(0)
    process.env['ROSTORE_COLD_IO'] = io
    const r = await openStore(dir, { residencyRefreshMs: 0 })
    expect(r.residency()?.io).toBe(io)
    return r
  }

  test('getAsync and getManyAsync answer the right values; cold reads counted, at most 2 pages each', async () => {
    const r = await coldReader()
    try {
      const before = r.residency()!
      expect(before.residentPages).toBeLessThan(before.pages / 2)
      for (let n = 0; n < 200; n++) {
        const i = (n * 7919) % 20_000
        expect((await r.getAsync(keyOf(i)))?.toString()).toBe(valueOf(i))
      }
      const keys = Array.from({ length: 100 }, (_, n) => keyOf((n * 131 + 5) % 20_000))
      const values = await r.getManyAsync([...keys, 'absent'])
      expect(values.map((v) => v?.toString())).toEqual([...keys.map((k) => valueOf(Number(k.slice(4)))), undefined])
      const s = r.residency()!
      expect(s.coldReads).toBeGreaterThan(150)
      expect(s.coldInFlight).toBe(0)
      expect(s.pagesRead).toBeGreaterThan(0)
      expect(s.pagesRead).toBeLessThanOrEqual(2 * s.coldReads)
      // Read once, a record is marked: no second cold read.
      expect(r.warm([keyOf(7919)])).toBeUndefined()
      expect(r.residency()!.coldReads).toBe(s.coldReads)
    } finally {
      r.close()
    }
  })

  test('warm() brings a batch in at once; the synchronous reads after it are right', async () => {
    const r = await coldReader()
    try {
      const keys = Array.from({ length: 64 }, (_, n) => keyOf(n * 311))
      const w = r.warm(keys)
      expect(w).toBeInstanceOf(Promise)
      expect(r.residency()!.coldInFlight).toBeGreaterThan(1)
      await w
      expect(r.warm(keys)).toBeUndefined()
      expect(r.getMany(keys).map((v) => v?.toString())).toEqual(keys.map((k) => valueOf(Number(k.slice(4)))))
    } finally {
      r.close()
    }
  })

  test('a hot read started after a cold one is answered first', async () => {
    const r = await coldReader()
    try {
      await r.getAsync(keyOf(1))
      const order: string[] = []
      const cold = r.getAsync(keyOf(2)).then((v) => order.push(`cold ${v?.toString() === valueOf(2)}`))
      const hot = r.getAsync(keyOf(1)).then((v) => order.push(`hot ${v?.toString() === valueOf(1)}`))
      await Promise.all([cold, hot])
      expect(order).toEqual(['hot true', 'cold true'])
    } finally {
      r.close()
    }
  })

  test('the synchronous get of a cold record reads it where it is called with one pread, and is right', async () => {
    const r = await coldReader()
    try {
      const before = r.residency()!.pagesRead
      expect(r.get(keyOf(42))?.toString()).toBe(valueOf(42))
      const s = r.residency()!
      expect(s.coldReads).toBe(1)
      expect(s.coldInFlight).toBe(0)
      expect(s.pagesRead - before).toBeGreaterThanOrEqual(1)
      expect(s.pagesRead - before).toBeLessThanOrEqual(2)
      // Its pages are marked: read again, it is hot.
      expect(r.get(keyOf(42))?.toString()).toBe(valueOf(42))
      expect(r.residency()!.coldReads).toBe(1)
      for (let n = 0; n < 300; n++) {
        const i = (n * 104_729 + 3) % 20_000
        expect(r.get(keyOf(i))?.toString()).toBe(valueOf(i))
      }
      expect(r.get('absent')).toBeUndefined()
      const after = r.residency()!
      expect(after.reads).toBe(303)
      expect(after.pagesRead - before).toBeLessThanOrEqual(2 * after.coldReads)
    } finally {
      r.close()
    }
  })

  test('closing the reader while cold reads are in flight: they finish, and nothing is read from a closed reader', async () => {
    const r = await coldReader()
    const w = r.warm(Array.from({ length: 32 }, (_, n) => keyOf(n * 97)))
    expect(w).toBeInstanceOf(Promise)
    r.close()
    await expect(w).resolves.toBeUndefined()
    await expect(r.getAsync(keyOf(3))).rejects.toThrow(/reader is closed/)
  })

  test('getAsync answers a cold record from its own read: the data file descriptors outlive a close in flight', async () => {
    const r = await coldReader()
    const pending = [11, 12, 13].map((i) => r.getAsync(keyOf(i)))
    expect(r.residency()!.coldInFlight).toBe(3)
    r.close()
    expect((await Promise.all(pending)).map((v) => v?.toString())).toEqual([11, 12, 13].map(valueOf))
    expect(r.residency()!.coldInFlight).toBe(0)
  })

  test("coldReads 'sync': no residency map, warm() never defers", async () => {
    evictTree(dir)
    const r = await openStore(dir, { coldReads: 'sync' })
    try {
      expect(r.residency()).toBeUndefined()
      expect(r.warm([keyOf(9)])).toBeUndefined()
      expect((await r.getAsync(keyOf(9)))?.toString()).toBe(valueOf(9))
    } finally {
      r.close()
    }
  })
})

/** The key of the record at `at` of a data file's bytes (u32 key length, u32 value length, u32 CRC, key, value). */
const keyAt = (data: Buffer, at: number): string => data.toString('utf8', at + 12, at + 12 + data.readUInt32LE(at))

describeNative("getAsync's cold reads where the bytes read do not answer alone (the addon, files evicted)", () => {
  test('compressed values and keys sharing a hash prefix: the right values, each cold read counted', async () => {
    const dir = tmp.fresh()
    await makeNodeDir(
      dir,
      Array.from({ length: 3000 }, (_, i): [string, string] => [keyOf(i), valueOf(i)]),
      { chunks: 2, compression: 'snappy', keyHash: 'md5-collide-8' },
    )
    // A copy for the synchronous reads: a mapping still held keeps its pages in the cache.
    const copy = tmp.fresh()
    cpSync(dir, copy, { recursive: true })
    evictTree(dir)
    const r = await openStore(dir, { residencyRefreshMs: 0 })
    try {
      for (let n = 0; n < 300; n++) {
        const i = (n * 7919) % 3000
        expect((await r.getAsync(keyOf(i)))?.toString()).toBe(valueOf(i))
      }
      expect(await r.getAsync('absent-key')).toBeUndefined()
      expect(r.residency()!.coldReads).toBeGreaterThan(0)
      expect(r.residency()!.coldInFlight).toBe(0)
    } finally {
      r.close()
    }
    // The synchronous get's cold reads.
    evictTree(copy)
    const s = await openStore(copy, { residencyRefreshMs: 0 })
    try {
      for (let n = 0; n < 300; n++) {
        const i = (n * 6661 + 1) % 3000
        expect(s.get(keyOf(i))?.toString()).toBe(valueOf(i))
      }
      expect(s.get('absent-key')).toBeUndefined()
      expect(s.residency()!.coldReads).toBeGreaterThan(0)
    } finally {
      s.close()
    }
  })

  test('a damaged record read cold is refused as get() refuses it (RO_CORRUPT), not answered', async () => {
    const dir = await store(2000)
    const file = join(dir, '0.data')
    const data = readFileSync(file)
    // The first record past the file's first two pages (read at open): a byte of its value flipped.
    let at = HEADER_SIZE
    while (at < 8192) at += 12 + data.readUInt32LE(at) + data.readUInt32LE(at + 4)
    const key = keyAt(data, at)
    const flip = at + 12 + key.length + 100
    data[flip] = (data[flip] as number) ^ 0x55
    writeFileSync(file, data)
    const copy = tmp.fresh()
    cpSync(dir, copy, { recursive: true })
    evictTree(dir)
    const r = await openStore(dir, { residencyRefreshMs: 0 })
    try {
      await expect(r.getAsync(key)).rejects.toMatchObject({ code: 'RO_CORRUPT' })
      expect(() => r.get(key)).toThrow(/fails its checksum/)
    } finally {
      r.close()
    }
    evictTree(copy)
    const s = await openStore(copy, { residencyRefreshMs: 0 })
    try {
      // Read cold by the synchronous get first: refused the same way.
      expect(() => s.get(key)).toThrow(/fails its checksum/)
      expect(s.residency()!.coldReads).toBe(1)
    } finally {
      s.close()
    }
  })
})

test("pread mode: getAsync reads on the pool first, then answers as get(); close waits for those reads' descriptors", async () => {
  const dir = await store(2000)
  const r = await openStore(dir, { access: 'pread' })
  expect(r.warm([keyOf(1)])).toBeUndefined()
  expect(r.residency()).toBeUndefined()
  expect((await r.getAsync(keyOf(1)))?.toString()).toBe(valueOf(1))
  const many = r.getManyAsync([keyOf(2), 'absent', keyOf(3)])
  r.close()
  await expect(many).rejects.toThrow(/reader is closed/)
})

test('mergeResidency: counts add up over serving loops, the files are counted once', () => {
  const a0 = { pages: 10, residentPages: 4, reads: 5, coldReads: 2, coldInFlight: 1, pagesRead: 3, indexLocked: true, indexLockError: '' }
  const a = { ...a0, io: 'uring' as const }
  const b = {
    ...a,
    residentPages: 6,
    reads: 7,
    coldReads: 1,
    coldInFlight: 0,
    pagesRead: 1,
    indexLocked: false,
    indexLockError: 'no',
    io: 'pool' as const,
  }
  expect(mergeResidency([a, undefined, b])).toEqual({
    pages: 10,
    residentPages: 6,
    reads: 12,
    coldReads: 3,
    coldInFlight: 1,
    pagesRead: 4,
    indexLocked: false,
    indexLockError: 'no',
    io: 'pool',
  })
  expect(mergeResidency([a, a])?.io).toBe('uring')
  expect(mergeResidency([undefined])).toBeUndefined()
})
