import { gzipSync } from 'node:zlib'
import { isStoreError } from '../../../../common/errors'
import { nativeFunctions } from '../../../../common/native'
import { codecByName, createCodec, decodeAtMost } from '../../../../formats/store/chunk/codec'

/**
 * decodeAtMost: what a client decompressing stored values allocates is bounded, and a
 * header declaring more than the bound is refused before anything is allocated.
 */
const tooLarge = (f: () => unknown): boolean => {
  try {
    f()
  } catch (err) {
    return isStoreError(err, 'RO_TOO_LARGE')
  }
  return false
}

const value = Buffer.from('a value of some length, '.repeat(40))
const encoders = [
  ['none', codecByName('none')],
  ['gzip', codecByName('gzip')],
  ['snappy', codecByName('snappy')],
  ...(nativeFunctions() ? ([['zstd', createCodec('zstd', { forEncode: true })]] as const) : []),
] as const

test.each(encoders)('%s: a value at the bound decodes, one byte over is RO_TOO_LARGE', (_name, codec) => {
  const stored = codec.encode(value)
  expect(decodeAtMost(codec, stored, value.length).equals(value)).toBe(true)
  expect(tooLarge(() => decodeAtMost(codec, stored, value.length - 1))).toBe(true)
})

test('a few bytes declaring gigabytes are refused from the header: a zstd frame, a snappy preamble, a gzip bomb', () => {
  // Magicless zstd frame header: single segment, a 4-byte content size of 4 GiB - 1, then a raw empty last block.
  const zstd = Buffer.from([0xa0, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00])
  expect(tooLarge(() => decodeAtMost(codecByName('zstd'), zstd, 64 << 20))).toBe(true)
  // A snappy preamble of 0xFFFFFFFF bytes.
  const snappy = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x00])
  expect(tooLarge(() => decodeAtMost(codecByName('snappy'), snappy, 64 << 20))).toBe(true)
  // 64 MiB of zeros gzip to ~64 KiB: inflated no further than the bound.
  const bomb = gzipSync(Buffer.alloc(64 << 20))
  expect(bomb.length).toBeLessThan(1 << 20)
  expect(tooLarge(() => decodeAtMost(codecByName('gzip'), bomb, 1 << 20))).toBe(true)
})
