import { StoreError } from '../../common/errors'
import { MAX_KEY_BYTES } from '../input/types'

/**
 * Binary framing of `POST /stores/<store>/multi-get`, safe for any key and value bytes.
 *
 *   request  = *( keyLen:u32be  key:keyLen bytes )
 *   response = *( status:u32be  [value:status bytes] ) [ 0xFFFFFFFE ]
 *              one frame per requested key, in order
 *              status = 0xFFFFFFFF: the key is absent (no value bytes follow)
 *              status = 0xFFFFFFFE: the last frame; the response stopped at the node's
 *                       response byte limit, and the keys from this one on were not
 *                       answered (ask for them again in another request)
 *              otherwise: the value's length, followed by the value
 *
 * Pure functions; the client side of the wire uses encodeKeys/decodeValues.
 */
export const ABSENT = 0xffffffff
export const TRUNCATED = 0xfffffffe
export const MAX_MULTIGET_BODY_BYTES = 16 << 20
export const MAX_MULTIGET_KEYS = 10_000

export function encodeKeys(keys: readonly (Uint8Array | string)[]): Buffer {
  const bufs = keys.map((k) => (typeof k === 'string' ? Buffer.from(k, 'utf8') : Buffer.from(k.buffer, k.byteOffset, k.byteLength)))
  const out = Buffer.allocUnsafe(bufs.reduce((n, b) => n + 4 + b.length, 0))
  let at = 0
  for (const b of bufs) {
    out.writeUInt32BE(b.length, at)
    b.copy(out, at + 4)
    at += 4 + b.length
  }
  return out
}

/**
 * The keys of a request body (views into `body`). RO_BAD_REQUEST when the framing is
 * broken, RO_TOO_LARGE for too many keys or a key longer than MAX_KEY_BYTES.
 */
export function decodeKeys(body: Buffer, maxKeys = MAX_MULTIGET_KEYS, maxKeyBytes = MAX_KEY_BYTES): Buffer[] {
  const keys: Buffer[] = []
  let at = 0
  while (at < body.length) {
    if (body.length - at < 4) throw new StoreError('RO_BAD_REQUEST', `multi-get body: truncated key length at byte ${at}`)
    const len = body.readUInt32BE(at)
    if (len > maxKeyBytes) throw new StoreError('RO_TOO_LARGE', `multi-get key ${keys.length} has ${len} bytes, more than ${maxKeyBytes}`)
    if (body.length - at - 4 < len)
      throw new StoreError('RO_BAD_REQUEST', `multi-get body: key ${keys.length} runs past the end of the body`)
    if (keys.length === maxKeys) throw new StoreError('RO_TOO_LARGE', `multi-get: more than ${maxKeys} keys`)
    keys.push(body.subarray(at + 4, at + 4 + len))
    at += 4 + len
  }
  return keys
}

/** Values present among the first `count` frames of a multi-get body (headers only are read). */
export function presentValues(body: Uint8Array, count: number): number {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength)
  let at = 0
  let present = 0
  for (let i = 0; i < count && at + 4 <= body.length; i++) {
    const len = view.getUint32(at)
    at += 4
    if (len === ABSENT) continue
    if (len === TRUNCATED) break
    present++
    at += len
  }
  return present
}

/** One buffer for all frames: sized first, then filled (no per-value allocation). */
export function encodeValues(values: readonly (Uint8Array | undefined)[]): Buffer {
  let size = 0
  for (const v of values) {
    if (v !== undefined && v.length >= TRUNCATED) throw new RangeError('value too large for the multi-get framing')
    size += 4 + (v?.length ?? 0)
  }
  const out = Buffer.allocUnsafe(size)
  let at = 0
  for (const v of values) {
    if (v === undefined) {
      out.writeUInt32BE(ABSENT, at)
      at += 4
    } else {
      out.writeUInt32BE(v.length, at)
      out.set(v, at + 4)
      at += 4 + v.length
    }
  }
  return out
}

/** The frame that ends a response at the node's byte limit. */
export function encodeTruncated(): Buffer {
  const out = Buffer.allocUnsafe(4)
  out.writeUInt32BE(TRUNCATED, 0)
  return out
}

export interface DecodedValues {
  /** One value per key answered, in request order (views into the body). */
  readonly values: (Buffer | undefined)[]
  /** The response stopped at the node's byte limit: keys after `values` were not answered. */
  readonly truncated: boolean
}

/**
 * Decode a response body that may stop at the node's byte limit. `expected` (the number
 * of keys sent) is checked when given: a complete response has that many values, a
 * truncated one fewer.
 */
export function decodeValuesPartial(body: Buffer, expected?: number): DecodedValues {
  const out: (Buffer | undefined)[] = []
  let at = 0
  let truncated = false
  while (at < body.length) {
    if (body.length - at < 4) throw new StoreError('RO_CORRUPT', `multi-get response: truncated frame at byte ${at}`)
    const status = body.readUInt32BE(at)
    at += 4
    if (status === ABSENT) {
      out.push(undefined)
      continue
    }
    if (status === TRUNCATED) {
      if (at !== body.length) throw new StoreError('RO_CORRUPT', `multi-get response: bytes after the end frame at byte ${at}`)
      truncated = true
      break
    }
    if (body.length - at < status) throw new StoreError('RO_CORRUPT', `multi-get response: value ${out.length} runs past the end`)
    out.push(body.subarray(at, at + status))
    at += status
  }
  if (expected !== undefined && (truncated ? out.length >= expected : out.length !== expected)) {
    throw new StoreError('RO_CORRUPT', `multi-get response: ${out.length} values for ${expected} keys${truncated ? ' (truncated)' : ''}`)
  }
  return { values: out, truncated }
}

/** Decode a complete response body; `expected` (the number of keys sent) is checked when given. */
export function decodeValues(body: Buffer, expected?: number): (Buffer | undefined)[] {
  const { values, truncated } = decodeValuesPartial(body, expected)
  if (truncated)
    throw new StoreError('RO_TOO_LARGE', `multi-get response: stopped at the node's response limit after ${values.length} values`)
  return values
}
