import fc from 'fast-check'
import { isStoreError, StoreError } from '../../../common/errors'
import { decodeNameSegment, errorResponse, httpStatusFor, percentDecodeBytes } from '../../../server/http-util'

describe('percentDecodeBytes', () => {
  test('decodes %XX to raw bytes, including non-UTF-8', () => {
    expect(percentDecodeBytes('a%2Fb')).toEqual(Buffer.from('a/b'))
    expect(percentDecodeBytes('%ff%00%C3%a9')).toEqual(Buffer.from([0xff, 0x00, 0xc3, 0xa9]))
    expect(percentDecodeBytes('a+b')).toEqual(Buffer.from('a+b'))
    expect(percentDecodeBytes('')).toEqual(Buffer.alloc(0))
  })

  test('round-trips any bytes encoded byte-wise', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const enc = [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')
        expect(percentDecodeBytes(enc).equals(Buffer.from(bytes))).toBe(true)
      }),
    )
  })

  test('matches decodeURIComponent on encodeURIComponent of text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 80 }), (s) => {
        expect(percentDecodeBytes(encodeURIComponent(s)).toString('utf8')).toBe(s)
      }),
    )
  })

  test('broken escapes and raw non-ASCII are RO_BAD_REQUEST', () => {
    for (const bad of ['%', '%4', '%zz', 'a%g0', 'é', 'a b', '\u0000']) {
      let err: unknown
      try {
        percentDecodeBytes(bad)
      } catch (e) {
        err = e
      }
      expect(isStoreError(err, 'RO_BAD_REQUEST')).toBe(true)
    }
  })

  test('name segments must be UTF-8', () => {
    expect(decodeNameSegment('users')).toBe('users')
    expect(decodeNameSegment('%2e%2e')).toBe('..')
    expect(() => decodeNameSegment('%ff')).toThrow(StoreError)
  })
})

describe('status mapping', () => {
  test('codes map to HTTP statuses', () => {
    expect(httpStatusFor('RO_BAD_REQUEST')).toBe(400)
    expect(httpStatusFor('RO_UNAUTHORIZED')).toBe(401)
    expect(httpStatusFor('RO_NOT_FOUND')).toBe(404)
    expect(httpStatusFor('RO_CONFLICT')).toBe(409)
    expect(httpStatusFor('RO_TOO_LARGE')).toBe(413)
    expect(httpStatusFor('RO_CHECKSUM_MISMATCH')).toBe(422)
    expect(httpStatusFor('RO_UNAVAILABLE')).toBe(503)
    expect(errorResponse(new Error('boom'))).toEqual({ status: 500, body: { error: { code: 'RO_INTERNAL', message: 'boom' } } })
  })
})
