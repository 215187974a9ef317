import { createHash } from 'node:crypto'
import { crc32 as zlibCrc32 } from 'node:zlib'
import { JS_BATCH_HASHES, batchHashes, type BatchHashFunctions } from '../../../common/batch-hash'
import { nativeFunctions } from '../../../common/native'

/** The builder's batch MD5 and CRC-32: the addon's and the JavaScript twins give the same answers as node:crypto and zlib. */
const native = nativeFunctions()
const modes: [string, BatchHashFunctions][] = [['js', JS_BATCH_HASHES]]
// CI builds the addon (npm ci); under ROSTORE_NATIVE=0 only the twins exist.
if (native) modes.push(['native', { mode: 'native', md5Batch: native.md5Batch, crc32Batch: native.crc32Batch }])

test('batchHashes() picks the addon unless ROSTORE_NATIVE=0', () => {
  expect(batchHashes().mode).toBe(process.env['ROSTORE_NATIVE'] === '0' ? 'js' : 'native')
})

/** Ranges of every length that changes MD5's padding (55, 56, 64) and CRC's paths (8, 16, 64), at odd offsets. */
function ranges(): { src: Buffer; starts: Uint32Array; ends: Uint32Array } {
  const lengths = [0, 1, 7, 8, 12, 15, 16, 55, 56, 57, 63, 64, 65, 100, 127, 128, 129, 1000, 5000]
  const src = Buffer.alloc(lengths.reduce((s, n) => s + n + 3, 0))
  for (let i = 0; i < src.length; i++) src[i] = (i * 131 + 7) & 0xff
  const starts = new Uint32Array(lengths.length)
  const ends = new Uint32Array(lengths.length)
  let at = 1
  lengths.forEach((n, i) => {
    starts[i] = at
    ends[i] = at + n
    at += n + 3
  })
  return { src, starts, ends }
}

describe.each(modes)('%s', (_name, f) => {
  test('md5Batch equals node:crypto MD5 of each range', () => {
    const { src, starts, ends } = ranges()
    const out = new Uint8Array(16 * starts.length + 16).fill(0xee)
    f.md5Batch(src, starts, ends, starts.length, out)
    for (let i = 0; i < starts.length; i++) {
      const want = createHash('md5').update(src.subarray(starts[i]!, ends[i]!)).digest()
      expect(Buffer.from(out.subarray(16 * i, 16 * i + 16))).toEqual(want)
    }
    // Nothing past the count is touched.
    expect([...out.subarray(16 * starts.length)]).toEqual(new Array(16).fill(0xee))
  })

  test('crc32Batch equals zlib crc32 of each range', () => {
    const { src, starts, ends } = ranges()
    const out = new Uint32Array(starts.length)
    f.crc32Batch(src, starts, ends, starts.length, out)
    for (let i = 0; i < starts.length; i++) expect(out[i]).toBe(starts[i] === ends[i] ? 0 : zlibCrc32(src.subarray(starts[i]!, ends[i]!)))
  })

  test('a count of 0 does nothing; a count below the arrays uses only the first ranges', () => {
    const { src, starts, ends } = ranges()
    const out = new Uint32Array(starts.length).fill(7)
    f.crc32Batch(src, starts, ends, 0, out)
    expect([...out]).toEqual(new Array(starts.length).fill(7))
    f.crc32Batch(src, starts, ends, 2, out)
    expect(out[2]).toBe(7)
    expect(out[1]).not.toBe(7)
  })

  test('ranges outside src, a count past the arrays and a short out are refused before anything is read', () => {
    const src = Buffer.alloc(10)
    const out16 = new Uint8Array(32)
    expect(() => f.md5Batch(src, Uint32Array.of(0), Uint32Array.of(11), 1, out16)).toThrow(/outside src/)
    expect(() => f.md5Batch(src, Uint32Array.of(5), Uint32Array.of(4), 1, out16)).toThrow(/outside src/)
    expect(() => f.md5Batch(src, Uint32Array.of(0), Uint32Array.of(1), 2, out16)).toThrow(/count exceeds/)
    expect(() => f.md5Batch(src, Uint32Array.of(0, 0, 0), Uint32Array.of(1, 1, 1), 3, out16)).toThrow(/16 bytes/)
    expect(() => f.crc32Batch(src, Uint32Array.of(0, 0), Uint32Array.of(1, 1), 2, new Uint32Array(1))).toThrow(/out/)
  })
})
