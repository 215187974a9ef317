import { FieldError } from '../../../../formats/input/input-error'
import { fieldKey, fieldValue, toJsonText } from '../../../../formats/input/row-value'
import { MAX_KEY_BYTES } from '../../../../formats/input/types'

describe('toJsonText', () => {
  it('matches JSON.stringify on plain JSON values', () => {
    const values: unknown[] = [null, true, 0, -1.5, 'a"b\n\u0000é', [1, [2, {}]], { a: 1, b: [null, 'x'], c: { d: false } }, 1e21, []]
    for (const v of values) expect(toJsonText(v)).toBe(JSON.stringify(v))
  })

  it('writes bigints with every digit', () => {
    expect(toJsonText({ n: 12345678901234567890123n, m: [-1n] })).toBe('{"n":12345678901234567890123,"m":[-1]}')
  })

  it('writes bytes as base64 strings', () => {
    expect(toJsonText({ b: Buffer.from([1, 2, 3]), u: new Uint8Array([255]) })).toBe('{"b":"AQID","u":"/w=="}')
  })

  it('leaves out undefined fields and writes undefined array items and non-finite numbers as null', () => {
    expect(toJsonText({ a: undefined, b: [undefined, NaN, Infinity] })).toBe('{"b":[null,null,null]}')
    expect(toJsonText(undefined)).toBe('null')
  })

  it('uses toJSON, as JSON.stringify does (dates, library row objects)', () => {
    const date = new Date(Date.UTC(2024, 0, 2))
    expect(toJsonText({ d: date })).toBe('{"d":"2024-01-02T00:00:00.000Z"}')
    expect(toJsonText({ r: { toJSON: () => ({ n: 1n }) } })).toBe('{"r":{"n":1}}')
  })

  it('writes other typed arrays as arrays of numbers', () => {
    expect(toJsonText(Int32Array.from([1, -2]))).toBe('[1,-2]')
    expect(toJsonText(BigInt64Array.from([3n]))).toBe('[3]')
  })
})

describe('fieldKey', () => {
  it('takes strings as UTF-8 text', () => {
    expect(fieldKey('clé', 'k')).toEqual({ bytes: Buffer.from('clé'), kind: 'string' })
  })

  it('takes numbers and bigints as decimal text', () => {
    expect(fieldKey(42, 'k').bytes.toString()).toBe('42')
    expect(fieldKey(-0.5, 'k').bytes.toString()).toBe('-0.5')
    expect(fieldKey(2n ** 64n, 'k')).toEqual({ bytes: Buffer.from('18446744073709551616'), kind: 'string' })
  })

  it('takes bytes as a binary key without copying', () => {
    const bytes = new Uint8Array([0, 1, 2, 3]).subarray(1, 3)
    const key = fieldKey(bytes, 'k')
    expect(key.kind).toBe('bytes')
    expect(key.bytes).toEqual(Buffer.from([1, 2]))
    expect(key.bytes.buffer).toBe(bytes.buffer)
  })

  it('refuses what has no key form, naming the field', () => {
    expect(() => fieldKey(undefined, 'id')).toThrow(new FieldError("missing key field 'id'"))
    expect(() => fieldKey(null, 'id')).toThrow(new FieldError("key field 'id' is null"))
    expect(() => fieldKey(true, 'id')).toThrow(/not a boolean/)
    expect(() => fieldKey([1], 'id')).toThrow(/not an array/)
    expect(() => fieldKey(NaN, 'id')).toThrow(/is NaN/)
    expect(() => fieldKey(2 ** 60, 'id')).toThrow(/too large to be exact/)
  })

  it('refuses empty and over-long keys', () => {
    expect(() => fieldKey('', 'k')).toThrow(new FieldError('empty key'))
    expect(() => fieldKey(new Uint8Array(0), 'k')).toThrow(new FieldError('empty key'))
    expect(fieldKey('x'.repeat(MAX_KEY_BYTES), 'k').bytes.length).toBe(MAX_KEY_BYTES)
    // Counted in bytes, not characters: 'é' is two bytes.
    expect(() => fieldKey('é'.repeat(MAX_KEY_BYTES / 2 + 1), 'k')).toThrow(/longer than the maximum/)
  })
})

describe('fieldValue', () => {
  it('keeps strings and bytes, writes the rest as JSON', () => {
    expect(fieldValue('')).toEqual({ bytes: Buffer.alloc(0), kind: 'string' })
    expect(fieldValue(new Uint8Array([9]))).toEqual({ bytes: Buffer.from([9]), kind: 'bytes' })
    expect(fieldValue(7n)).toEqual({ bytes: Buffer.from('7'), kind: 'json' })
    expect(fieldValue(null)).toEqual({ bytes: Buffer.from('null'), kind: 'json' })
    expect(fieldValue({ a: 'b' })).toEqual({ bytes: Buffer.from('{"a":"b"}'), kind: 'json' })
  })
})
