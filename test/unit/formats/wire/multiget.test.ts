import fc from 'fast-check'
import {
  ABSENT,
  decodeKeys,
  decodeValues,
  decodeValuesPartial,
  encodeKeys,
  encodeTruncated,
  encodeValues,
  presentValues,
  TRUNCATED,
} from '../../../../formats/wire/multiget'

describe('multi-get framing', () => {
  test('keys round-trip, any bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 50 }), (keys) => {
        const decoded = decodeKeys(encodeKeys(keys))
        expect(decoded.map((k) => [...k])).toEqual(keys.map((k) => [...k]))
      }),
    )
  })

  test('values round-trip, absent distinct from empty', () => {
    fc.assert(
      fc.property(fc.array(fc.option(fc.uint8Array({ maxLength: 64 }), { nil: undefined }), { maxLength: 50 }), (vals) => {
        const decoded = decodeValues(encodeValues(vals), vals.length)
        expect(decoded.map((v) => (v === undefined ? null : [...v]))).toEqual(vals.map((v) => (v === undefined ? null : [...v])))
      }),
    )
    expect(encodeValues([undefined, Buffer.alloc(0)])).toEqual(Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]))
    expect(ABSENT).toBe(0xffffffff)
  })

  test('documented example', () => {
    // keys "a" and "bc"
    expect(encodeKeys(['a', 'bc']).toString('hex')).toBe('00000001' + '61' + '00000002' + '6263')
    // "a" -> "xyz", "bc" absent
    expect(encodeValues([Buffer.from('xyz'), undefined]).toString('hex')).toBe('00000003' + '78797a' + 'ffffffff')
  })

  test('malformed or oversized requests', () => {
    expect(() => decodeKeys(Buffer.from([0, 0, 0]))).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST' }))
    expect(() => decodeKeys(Buffer.from([0, 0, 0, 5, 1, 2]))).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST' }))
    expect(() => decodeKeys(Buffer.from([0, 1, 0, 0]))).toThrow(expect.objectContaining({ code: 'RO_TOO_LARGE' }))
    expect(() => decodeKeys(encodeKeys(['a', 'b', 'c']), 2)).toThrow(expect.objectContaining({ code: 'RO_TOO_LARGE' }))
    expect(decodeKeys(Buffer.alloc(0))).toEqual([])
    expect(() => decodeValues(encodeValues([Buffer.from('x')]), 2)).toThrow(expect.objectContaining({ code: 'RO_CORRUPT' }))
  })

  test('a response stopped at the node byte limit ends with the end frame', () => {
    expect(TRUNCATED).toBe(0xfffffffe)
    const body = Buffer.concat([encodeValues([Buffer.from('a'), undefined]), encodeTruncated()])
    expect(body.toString('hex')).toBe('00000001' + '61' + 'ffffffff' + 'fffffffe')
    const page = decodeValuesPartial(body, 5)
    expect(page.truncated).toBe(true)
    expect(page.values.map((v) => v?.toString())).toEqual(['a', undefined])
    expect(decodeValuesPartial(encodeValues([Buffer.from('a')]), 1)).toEqual({ values: [Buffer.from('a')], truncated: false })
    // The strict decoder refuses a truncated body; bytes after the end frame are damage.
    expect(() => decodeValues(body, 5)).toThrow(expect.objectContaining({ code: 'RO_TOO_LARGE' }))
    expect(() => decodeValuesPartial(Buffer.concat([body, Buffer.from([0])]), 5)).toThrow(expect.objectContaining({ code: 'RO_CORRUPT' }))
    // A truncated answer has fewer values than keys asked.
    expect(() => decodeValuesPartial(body, 2)).toThrow(expect.objectContaining({ code: 'RO_CORRUPT' }))
    expect(() => encodeValues([{ length: TRUNCATED } as Uint8Array])).toThrow(RangeError)
  })

  test('presentValues counts the values a body holds, reading only the frame headers', () => {
    fc.assert(
      fc.property(fc.array(fc.option(fc.uint8Array({ maxLength: 40 }), { nil: undefined }), { maxLength: 40 }), (values) => {
        const body = encodeValues(values)
        expect(presentValues(body, values.length)).toBe(values.filter((v) => v !== undefined).length)
        // A truncated body: only the frames before the end frame count.
        const cut = Math.floor(values.length / 2)
        const truncated = Buffer.concat([encodeValues(values.slice(0, cut)), encodeTruncated()])
        expect(presentValues(truncated, values.length)).toBe(values.slice(0, cut).filter((v) => v !== undefined).length)
      }),
    )
  })
})
