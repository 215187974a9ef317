import { execFileSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { crc32 as zlibCrc32 } from 'node:zlib'
import { isStoreError } from '../../../../common/errors'
import { LOOKUP_HIT, LOOKUP_MISS, SCAN_OFFSET, SCAN_OK, SCAN_ORDER, nativeFunctions, type LookupChunkSpec } from '../../../../common/native'
import { HEADER_SIZE, INDEX_ENTRY_SIZE } from '../../../../formats/store/chunk/header'
import { RADIX_SHIFT } from '../../../../formats/store/read/mapped-chunk'
import { buildRadixTable } from '../../../../formats/store/chunk/search'
import type { StoreOps } from '../../../../formats/store/read/store-ops'
import { jsStoreOps } from '../../../../testkit/js-twins/store-ops'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * Every native function against its JavaScript twin: one suite, both implementations
 * (the addon's only when it is loaded; test/unit/common/native.test.ts checks that it is
 * unless ROSTORE_NATIVE=0).
 */
const tmp = makeTmp()
afterAll(tmp.cleanup)

const native = nativeFunctions()
const IMPLS: [string, StoreOps][] = [...(native ? [['native', native] as [string, StoreOps]] : []), ['js', jsStoreOps]]

/** RFC 1321 appendix A.5. */
const MD5_VECTORS: [string, string][] = [
  ['', 'd41d8cd98f00b204e9800998ecf8427e'],
  ['a', '0cc175b9c0f1b6a831c399e269772661'],
  ['abc', '900150983cd24fb0d6963f7d28e17f72'],
  ['message digest', 'f96b697d7cb7938d525a2f31aaf161d0'],
  ['abcdefghijklmnopqrstuvwxyz', 'c3fcd3d76192e4007dfb496cca67e13b'],
  ['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', 'd174ab98d277d9f5a5611c2c9f419d9f'],
  ['12345678901234567890123456789012345678901234567890123456789012345678901234567890', '57edf4a22be3c955ac49da2e2107b67a'],
]

async function sampleStore(records = 5000, chunks = 1): Promise<{ dir: string; keys: string[] }> {
  const dir = tmp.fresh()
  const keys = Array.from({ length: records }, (_, i) => `key-${i}`)
  await makeNodeDir(
    dir,
    keys.map((k, i) => [k, i % 13 === 0 ? '' : `value-${i}-${'v'.repeat(i % 200)}`]),
    { chunks },
  )
  return { dir, keys }
}

describe.each(IMPLS)('%s', (_name, ops) => {
  test('md5: RFC 1321 vectors, and node:crypto on every length around the block boundaries', () => {
    const out = new Uint8Array(16)
    for (const [text, hex] of MD5_VECTORS) {
      ops.md5(Buffer.from(text), out)
      expect(Buffer.from(out).toString('hex')).toBe(hex)
    }
    for (let len = 0; len <= 200; len++) {
      const b = randomBytes(len)
      ops.md5(b, out)
      expect(Buffer.from(out)).toEqual(createHash('md5').update(b).digest())
    }
  })

  test('crc32: equal to zlib on random lengths, and chainable', () => {
    for (let len = 0; len <= 300; len += 7) {
      const b = randomBytes(len)
      expect(ops.crc32(b, 0)).toBe(zlibCrc32(b))
      const half = len >> 1
      if (len > 0) expect(ops.crc32(b.subarray(half), ops.crc32(b.subarray(0, half), 0))).toBe(zlibCrc32(b))
    }
    expect(ops.crc32(new Uint8Array(0), 1234)).toBe(1234)
  })

  test('mapFile: windows cover the file in order; empty and missing files', async () => {
    const file = join(tmp.fresh(), 'f')
    const bytes = randomBytes(200_000)
    writeFileSync(file, bytes)
    const m = await ops.mapFile(file, true, 65536)
    expect(m.size).toBe(bytes.length)
    expect(m.windows.map((w) => w.byteLength)).toEqual([65536, 65536, 65536, 200_000 - 3 * 65536])
    expect(Buffer.concat(m.windows.map((w) => Buffer.from(w)))).toEqual(bytes)
    writeFileSync(file, '')
    expect(await ops.mapFile(file, true, 65536)).toEqual({ size: 0, windows: [] })
    const err = await ops.mapFile(join(tmp.dir, 'absent'), false, 65536).catch((e: unknown) => e)
    expect(isStoreError(err, 'RO_IO')).toBe(true)
  })

  test('scanIndex: accepts a good index with its checksum and radix table; finds the entry out of order or with a bad offset', async () => {
    const { dir } = await sampleStore(3000)
    const meta = JSON.parse(readFileSync(join(dir, 'metadata.json'), 'utf8')) as { files: { name: string; checksum: string }[] }
    const indexFile = join(dir, '0.index')
    const dataSize = readFileSync(join(dir, '0.data')).length
    const bits = Math.floor(Math.log2(3000)) - RADIX_SHIFT
    const radix = new Uint32Array(2 ** bits + 1)
    const index = await ops.mapFile(indexFile, false, 65536)
    const scan = await ops.scanIndex(index.windows, 3000, dataSize, radix, bits, true, true)
    expect(scan).toEqual({ status: SCAN_OK, entry: 0, checksum: meta.files.find((f) => f.name === '0.index')!.checksum })
    // The same bucket starts the pread reader's table gives, for the same number of bits.
    const raw = readFileSync(indexFile)
    const hi = Uint32Array.from({ length: 3000 }, (_, i) => raw.readUInt32BE(HEADER_SIZE + i * INDEX_ENTRY_SIZE))
    const shift = 32 - bits
    for (let b = 0; b < radix.length - 1; b++)
      expect(radix[b]).toBe(hi.findIndex((h) => h >>> shift >= b) === -1 ? 3000 : hi.findIndex((h) => h >>> shift >= b))
    expect(radix[radix.length - 1]).toBe(3000)
    expect(buildRadixTable(hi)?.starts[0]).toBe(0)

    const bad = Buffer.from(raw)
    bad.copy(bad, HEADER_SIZE + 100 * INDEX_ENTRY_SIZE, HEADER_SIZE + 200 * INDEX_ENTRY_SIZE, HEADER_SIZE + 200 * INDEX_ENTRY_SIZE + 8)
    writeFileSync(indexFile, bad)
    const order = await ops.scanIndex((await ops.mapFile(indexFile, false, 65536)).windows, 3000, dataSize, null, 0, false, false)
    expect(order).toEqual({ status: SCAN_ORDER, entry: 101, checksum: '' })

    const off = Buffer.from(raw)
    off.writeUInt32LE(dataSize, HEADER_SIZE + 7 * INDEX_ENTRY_SIZE + 8)
    writeFileSync(indexFile, off)
    const offset = await ops.scanIndex((await ops.mapFile(indexFile, false, 65536)).windows, 3000, dataSize, null, 0, false, false)
    expect(offset).toMatchObject({ status: SCAN_OFFSET, entry: 7 })
  })

  test('createLookup: hits, misses and probes over a windowed store; getMany in request order', async () => {
    const { dir, keys } = await sampleStore(4000, 2)
    const chunks: LookupChunkSpec[] = []
    for (let c = 0; c < 2; c++) {
      const index = await ops.mapFile(join(dir, `${c}.index`), false, 65536)
      const data = await ops.mapFile(join(dir, `${c}.data`), true, 65536)
      const count = (index.size - HEADER_SIZE) / INDEX_ENTRY_SIZE
      chunks.push({
        index: index.windows,
        count,
        data: data.windows,
        dataSize: data.size,
        radix: null,
        radixBits: 0,
        resident: null,
        indexCrcs: null,
      })
    }
    const key = Buffer.alloc(256)
    const out = new Float64Array(8)
    const lookup = ops.createLookup({ chunks, key, out, binary: false, checkCrc: true, collideBits: -1 })
    const valueOf = (): Buffer => {
      const c = chunks[out[0]!]!
      const w = c.data[0]!.byteLength
      const parts = []
      for (let at = out[1]!; at < out[1]! + out[2]!; at++) parts.push(new Uint8Array(c.data[Math.floor(at / w)]!)[at % w]!)
      return Buffer.from(parts)
    }
    for (let i = 0; i < keys.length; i += 7) {
      const n = key.write(keys[i]!)
      expect(lookup.get(n)).toBe(LOOKUP_HIT)
      expect(valueOf().toString()).toBe(i % 13 === 0 ? '' : `value-${i}-${'v'.repeat(i % 200)}`)
      expect(out[3]).toBeGreaterThan(0)
    }
    expect(lookup.get(key.write('absent'))).toBe(LOOKUP_MISS)
    const batch = ['key-5', 'absent', 'key-3999', 'key-5', '']
    const bytes = Buffer.from(batch.join(''))
    let end = 0
    const ends = Uint32Array.from(batch, (k) => (end += Buffer.byteLength(k)))
    const res = new Float64Array(4 * batch.length)
    lookup.getMany(bytes, ends, batch.length, res)
    expect(Array.from({ length: batch.length }, (_, i) => res[4 * i])).toEqual([1, 0, 1, 1, 0])
    expect(res[4 * 3 + 2]).toBe(res[2])
    // (A TypeError of the addon's realm: matched by message, jest runs tests in another context.)
    expect(() => lookup.get(key.length + 1)).toThrow(/keyLength must fit/)
  })
})

test('native and JS lookups agree status by status, also on damaged records', async () => {
  if (!native) return expect(process.env['ROSTORE_NATIVE']).toBe('0')
  const { dir, keys } = await sampleStore(2000)
  const file = join(dir, '0.data')
  const b = readFileSync(file)
  for (let at = 200; at < b.length; at += 997) b[at] = b[at]! ^ 0x5a
  writeFileSync(file, b)
  const results = await Promise.all(
    IMPLS.map(async ([, ops]) => {
      const index = await ops.mapFile(join(dir, '0.index'), false, 65536)
      const data = await ops.mapFile(file, true, 65536)
      const chunk = {
        index: index.windows,
        count: 2000,
        data: data.windows,
        dataSize: data.size,
        radix: null,
        radixBits: 0,
        resident: null,
        indexCrcs: null,
      }
      const key = Buffer.alloc(64)
      const out = new Float64Array(8)
      const lookup = ops.createLookup({ chunks: [chunk], key, out, binary: true, checkCrc: true, collideBits: -1 })
      return [...keys, 'x', 'y'].map((k) => [lookup.get(key.write(k)), out[0], out[1], out[2], out[3], out[4]])
    }),
  )
  expect(results[0]!.filter((r) => r[0]! < 0).length).toBeGreaterThan(10)
  expect(results[0]).toEqual(results[1])
})

/**
 * mapResident maps the pages the page cache holds and starts no read for the others: a
 * file written moments ago is mapped whole; once dropped from the cache, not.
 */
test('native mapResident: maps the cached pages of a file, none of a dropped one', async () => {
  if (!native) return expect(process.env['ROSTORE_NATIVE']).toBe('0')
  const ops: StoreOps = native
  const page = Number(execFileSync('getconf', ['PAGESIZE'], { encoding: 'utf8' }).trim())
  const file = join(tmp.fresh(), 'pages.bin')
  const size = 64 * page + 123
  writeFileSync(file, randomBytes(size), { flush: true })
  const pages = Math.ceil(size / page)
  const cached = await ops.mapFile(file, true, 1 << 20)
  expect(await ops.mapResident(cached.windows)).toBe(pages)
  // The bytes seen through the mapping are the file's, resident or not.
  expect(Buffer.from(cached.windows[0] as ArrayBuffer).equals(readFileSync(file))).toBe(true)
  const other = join(tmp.fresh(), 'dropped.bin')
  writeFileSync(other, randomBytes(size), { flush: true })
  expect(ops.dropCache(other)).toBe(true)
  const dropped = await ops.mapFile(other, true, 1 << 20)
  expect(await ops.mapResident(dropped.windows)).toBeLessThan(pages)
  await expect(jsStoreOps.mapResident(dropped.windows)).resolves.toBe(0)
})

describe.each(IMPLS)('an index damaged after open (%s)', (name, ops) => {
  test('a lookup of a key whose entry was damaged answers RO_E_INDEX (-6), never a miss; other misses stay misses', async () => {
    const { dir, keys } = await sampleStore(3000, 1)
    const indexFile = join(dir, '0.index')
    const index = await ops.mapFile(indexFile, false, 65536)
    const data = await ops.mapFile(join(dir, '0.data'), true, 65536)
    const count = (index.size - HEADER_SIZE) / INDEX_ENTRY_SIZE
    const crcs = new Uint32Array(Math.ceil(index.size / 4096))
    const scan = await ops.scanIndex(index.windows, count, data.size, null, 0, false, false, crcs)
    expect(scan.status).toBe(SCAN_OK)
    const chunk = {
      index: index.windows,
      count,
      data: data.windows,
      dataSize: data.size,
      radix: null,
      radixBits: 0,
      resident: null,
      indexCrcs: crcs,
    }
    const key = Buffer.alloc(64)
    const out = new Float64Array(8)
    const lookup = ops.createLookup({ chunks: [chunk], key, out, binary: false, checkCrc: true, collideBits: -1 })
    const victim = keys[1234] as string
    expect(lookup.get(key.write(victim))).toBe(LOOKUP_HIT)
    // The entry whose hash prefix is the victim's: flip the last byte of that prefix.
    const prefix = createHash('md5').update(victim).digest().subarray(0, 8)
    const bytes = readFileSync(indexFile)
    let at = -1
    for (let i = 0; i < count && at < 0; i++)
      if (bytes.subarray(HEADER_SIZE + i * 16, HEADER_SIZE + i * 16 + 8).equals(prefix)) at = HEADER_SIZE + i * 16 + 7
    expect(at).toBeGreaterThan(0)
    if (name === 'native') {
      // The index is mapped shared and read-only: the damage comes through the file.
      const fd = openSync(indexFile, 'r+')
      writeSync(fd, Buffer.from([(bytes[at] as number) ^ 0xff]), 0, 1, at)
      closeSync(fd)
    } else {
      const w = index.windows[Math.floor(at / 65536)] as ArrayBuffer
      const view = new Uint8Array(w)
      view[at % 65536] = (view[at % 65536] as number) ^ 0xff
    }
    expect(lookup.get(key.write(victim))).toBe(-6)
    expect(out[4]).toBe(Math.floor(at / 4096) * 4096)
    // Keys whose search never reads the damaged block are answered as before.
    const far = keys.filter((k) => Math.abs(createHash('md5').update(k).digest()[0]! - prefix[0]!) > 64).slice(0, 50)
    for (const k of far) expect(lookup.get(key.write(k))).toBe(LOOKUP_HIT)
    const absent = Array.from({ length: 400 }, (_, i) => `absent-${i}`).filter(
      (k) => Math.abs(createHash('md5').update(k).digest()[0]! - prefix[0]!) > 64,
    )
    for (const k of absent.slice(0, 50)) expect(lookup.get(key.write(k))).toBe(LOOKUP_MISS)
    lookup.close()
  })
})
