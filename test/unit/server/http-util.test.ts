import fc from 'fast-check'
import { isStoreError, StoreError } from '../../../common/errors'
import { decodeNameSegment, errorResponse, httpStatusFor, percentDecodeBytes, publicErrorResponse } from '../../../server/http/http-util'

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

describe('publicErrorResponse', () => {
  const path = '/var/lib/rostore/users/version-3/0.data'
  test('server-side failures keep their code and status but say nothing of paths or internals', () => {
    for (const err of [
      new StoreError('RO_CORRUPT', `${path}: record at 123 fails its CRC`),
      new StoreError('RO_CHECKSUM_MISMATCH', `${path}: checksum mismatch`),
      new StoreError('RO_BAD_FORMAT', `${path}: format major 9`),
      new StoreError('RO_IO', `EIO: i/o error, read '${path}'`),
      new StoreError('RO_UNAVAILABLE', `store users has no live version on this node (${path}: missing)`),
      new Error(`ENOENT: no such file or directory, open '${path}'`),
    ]) {
      const pub = publicErrorResponse(err)
      const full = errorResponse(err)
      expect(pub.status).toBe(full.status)
      expect(pub.body.error.code).toBe(full.body.error.code)
      expect(pub.body.error.message).not.toContain('/var/lib')
      expect(pub.body.error.message.length).toBeGreaterThan(10)
    }
  })

  test('errors about the request itself keep their message', () => {
    for (const err of [
      new StoreError('RO_BAD_REQUEST', 'invalid store name'),
      new StoreError('RO_NOT_FOUND', 'no store x on this node'),
      new StoreError('RO_TOO_LARGE', 'the body is larger than the limit of 1048576 bytes'),
    ]) {
      expect(publicErrorResponse(err)).toEqual(errorResponse(err))
    }
  })
})
