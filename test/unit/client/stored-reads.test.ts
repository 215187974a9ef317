import { ValueDecoders } from '../../../client/stored-reads'
import { nativeFunctions } from '../../../common/native'
import { xxh64Hex } from '../../../formats/store/chunk/checksum'
import { createCodec } from '../../../formats/store/chunk/codec'
import { trainZstdDictionary } from '../../../formats/store/chunk/zstd-codec'
import { realisticValues } from '../../../testkit/stores/realistic-values'

/** The client's decoders: one fetch per dictionary, a swap in between noticed, nothing wrong cached. */
const maybe = nativeFunctions() ? describe : describe.skip

maybe('ValueDecoders', () => {
  const gen = realisticValues(3)
  const samples = Array.from({ length: 4000 }, () => gen.next())
  const dictA = trainZstdDictionary(samples.slice(0, 2000), 16 << 10)!
  const dictB = trainZstdDictionary(samples.slice(2000), 16 << 10)!
  const value = samples[0]!
  const frameA = createCodec('zstd', { dictionary: dictA, forEncode: true }).encode(value)

  test('a dictionary is fetched once per checksum, and decodes what it compressed', async () => {
    const a = await xxh64Hex(dictA)
    let fetches = 0
    const fetch = () => {
      fetches++
      return Promise.resolve({ bytes: dictA, checksum: a })
    }
    const d = new ValueDecoders()
    const [c1, c2] = await Promise.all([
      d.codecFor({ compression: 'zstd', dictionary: a }, fetch, 'n'),
      d.codecFor({ compression: 'zstd', dictionary: a }, fetch, 'n'),
    ])
    expect(c1).toBe(c2)
    expect(fetches).toBe(1)
    expect(c1.decode(frameA).equals(value)).toBe(true)
  })

  test('a node that swapped in between answers another dictionary: RO_UNAVAILABLE, and it is not kept under the asked checksum', async () => {
    const [a, b] = [await xxh64Hex(dictA), await xxh64Hex(dictB)]
    const d = new ValueDecoders()
    await expect(
      d.codecFor({ compression: 'zstd', dictionary: a }, () => Promise.resolve({ bytes: dictB, checksum: b }), 'node 0'),
    ).rejects.toMatchObject({
      code: 'RO_UNAVAILABLE',
    })
    const right = await d.codecFor({ compression: 'zstd', dictionary: a }, () => Promise.resolve({ bytes: dictA, checksum: a }), 'node 0')
    expect(right.decode(frameA).equals(value)).toBe(true)
  })

  test('codecs without a dictionary need no fetch', async () => {
    const d = new ValueDecoders()
    const never = () => Promise.reject(new Error('no fetch expected'))
    for (const compression of ['none', 'gzip', 'snappy', 'zstd'] as const) {
      const c = await d.codecFor({ compression }, never, 'n')
      expect(c.name).toBe(compression)
      // One decoder per codec, not one per read.
      expect(await d.codecFor({ compression }, never, 'n')).toBe(c)
    }
  })
})
