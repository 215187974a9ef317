import { compress } from '@mongodb-js/zstd'
import { randomBytes } from 'node:crypto'
import { nativeFunctions } from '../../../../common/native'
import { CodecError, decompressAsync, zstdDecompressJs } from '../../../../formats/input/parquet/codecs'

/** ZSTD pages: the addon (the system's libzstd, into a buffer of the page's size) and its JavaScript twin agree. */
const native = nativeFunctions()

const inputs: [string, Buffer][] = [
  ['text', Buffer.from('parquet page '.repeat(20_000))],
  ['random bytes', randomBytes(300_000)],
  ['one byte', Buffer.from([7])],
]

type Zstd = (src: Uint8Array, dst: Uint8Array) => number
const modes: [string, Zstd][] = [['its JavaScript twin', zstdDecompressJs]]
// CI builds the addon (npm ci); under ROSTORE_NATIVE=0 only the twin exists.
if (native) modes.push(['the addon', native.zstdDecompress])

test('the addon finds the system libzstd on this machine (unless ROSTORE_NATIVE=0)', () => {
  if (process.env['ROSTORE_NATIVE'] === '0') {
    expect(native).toBeUndefined()
    return
  }
  // -1 would mean no libzstd.so.1: the build's ZSTD pages would go back to the npm binding.
  expect(native?.zstdDecompress(Buffer.alloc(0), Buffer.alloc(0))).toBe(0)
})

describe.each(modes)('zstdDecompress: %s', (_name, zstdDecompress) => {
  test.each(inputs)('%s: every byte back, in a buffer of exactly its size', async (_what, data) => {
    const packed = await compress(data, 3)
    const out = Buffer.alloc(data.length)
    expect(zstdDecompress(packed, out)).toBe(data.length)
    expect(out.equals(data)).toBe(true)
  })

  test('several frames one after the other, as the format allows', async () => {
    const a = Buffer.from('first frame '.repeat(100))
    const b = randomBytes(5000)
    const out = Buffer.alloc(a.length + b.length)
    expect(zstdDecompress(Buffer.concat([await compress(a), await compress(b)]), out)).toBe(out.length)
    expect(out.equals(Buffer.concat([a, b]))).toBe(true)
  })

  test('corrupt data, or a buffer too small for it, throws', async () => {
    const data = Buffer.from('x'.repeat(10_000))
    const packed = await compress(data)
    expect(() => zstdDecompress(packed, Buffer.alloc(100))).toThrow()
    const bad = Buffer.from(packed)
    bad[4] = (bad[4] ?? 0) ^ 0xff
    expect(() => zstdDecompress(bad.subarray(0, bad.length - 3), Buffer.alloc(data.length))).toThrow()
  })
})

describe('decompressAsync of a ZSTD page', () => {
  test('a page header size that differs from the data is a CodecError naming both', async () => {
    const data = Buffer.from('y'.repeat(4096))
    const packed = await compress(data)
    await expect(decompressAsync('ZSTD', packed, 5000)).rejects.toThrow(CodecError)
    await expect(decompressAsync('ZSTD', packed, 4000)).rejects.toThrow(/ZSTD data/)
    expect(Buffer.from(await decompressAsync('ZSTD', packed, 4096)).equals(data)).toBe(true)
  })

  test('garbage is a CodecError, not a crash', async () => {
    await expect(decompressAsync('ZSTD', randomBytes(64), 100)).rejects.toThrow(CodecError)
  })
})
