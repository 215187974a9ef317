/**
 * The one place that decides how a field value read from JSON lines, CSV, Parquet or Arrow
 * becomes the bytes of a key or value, so all readers agree:
 *   string           -> its UTF-8 bytes, kind 'string'
 *   Uint8Array       -> the bytes themselves, kind 'bytes' (binary Parquet/Arrow columns)
 *   anything else    -> JSON text, kind 'json' (bigints keep all their digits)
 * Keys additionally accept numbers and bigints (as decimal text) and refuse the rest.
 */
import { types } from 'node:util'
import { FieldError } from './input-error'
import { MAX_KEY_BYTES, type KeyKind, type ValueKind } from './types'

export interface FieldBytes<K extends string> {
  readonly bytes: Buffer
  readonly kind: K
}

/** Why these key bytes cannot be a key, or undefined when they can. */
export function keyProblem(key: Buffer): string | undefined {
  if (key.length === 0) return 'empty key'
  if (key.length > MAX_KEY_BYTES) return `key is ${key.length} bytes, longer than the maximum ${MAX_KEY_BYTES}`
  return undefined
}

// Not `instanceof Uint8Array`: arrays made in another realm (a vm context) fail it.
const isUint8Array = types.isUint8Array

/** A Buffer over the same memory: Arrow hands out plain Uint8Arrays, the contract wants Buffers. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/**
 * Key bytes of a field value; `field` names the field in messages. Throws FieldError for
 * a missing (undefined) or null key, a type that has no natural text, and bad lengths.
 */
export function fieldKey(value: unknown, field: string): FieldBytes<KeyKind> {
  let key: FieldBytes<KeyKind>
  if (typeof value === 'string') {
    key = { bytes: Buffer.from(value, 'utf8'), kind: 'string' }
  } else if (isUint8Array(value)) {
    key = { bytes: asBuffer(value), kind: 'bytes' }
  } else if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new FieldError(`key field '${field}' is ${value}, not a usable key`)
    // Past 2^53 the number read is not the number written: two rows could silently share a key.
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
      throw new FieldError(`key field '${field}' is the integer ${value}, too large to be exact; write it as a string`)
    }
    key = { bytes: Buffer.from(String(value), 'latin1'), kind: 'string' }
  } else if (typeof value === 'bigint') {
    key = { bytes: Buffer.from(value.toString(), 'latin1'), kind: 'string' }
  } else if (value === undefined) {
    throw new FieldError(`missing key field '${field}'`)
  } else if (value === null) {
    throw new FieldError(`key field '${field}' is null`)
  } else {
    throw new FieldError(`key field '${field}' must be a string, a number or bytes, not ${describe(value)}`)
  }
  const problem = keyProblem(key.bytes)
  if (problem !== undefined) throw new FieldError(problem)
  return key
}

/** Value bytes of a field value (see the table at the top). A missing value is JSON null. */
export function fieldValue(value: unknown): FieldBytes<ValueKind> {
  if (typeof value === 'string') return { bytes: Buffer.from(value, 'utf8'), kind: 'string' }
  if (isUint8Array(value)) return { bytes: asBuffer(value), kind: 'bytes' }
  return { bytes: Buffer.from(toJsonText(value), 'utf8'), kind: 'json' }
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') return 'an object'
  return `a ${typeof value}`
}

/**
 * JSON text of any value a reader produces. Unlike JSON.stringify it writes bigints
 * (Parquet INT64, Arrow Int64) as plain numbers with every digit and binary data
 * (Buffer, Uint8Array) as base64 strings instead of objects of byte indexes; objects with
 * a toJSON method (Date, Arrow vectors and struct rows) are serialised through it, as
 * JSON.stringify would. Undefined is `null` at the top level, as in JSON.stringify arrays.
 */
export function toJsonText(value: unknown): string {
  try {
    return write(value, '') ?? 'null'
  } catch (err) {
    // write() recurses once per level: a value nested thousands of levels deep (valid
    // JSON, which JSON.parse accepts) overflows the stack. Readers report FieldErrors
    // with the record's position.
    if (err instanceof Error && err.name === 'RangeError')
      throw new FieldError(`value is nested too deeply to be written as JSON (${err.message})`)
    throw err
  }
}

function write(value: unknown, key: string): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null'
    case 'boolean':
      return value ? 'true' : 'false'
    case 'bigint':
      return value.toString()
    case 'object':
      return value === null ? 'null' : writeObject(value, key)
    default:
      // undefined, functions and symbols are left out, as JSON.stringify does.
      return undefined
  }
}

function writeObject(value: object, key: string): string | undefined {
  if (isUint8Array(value)) return JSON.stringify(asBuffer(value).toString('base64'))
  const toJSON = (value as { toJSON?: unknown }).toJSON
  if (typeof toJSON === 'function') {
    const replaced: unknown = toJSON.call(value, key)
    // A toJSON returning its own object would recurse forever; write its fields instead.
    if (replaced !== value) return write(replaced, key)
  }
  if (Array.isArray(value) || ArrayBuffer.isView(value)) {
    const items = Array.from(value as ArrayLike<unknown>, (item, i) => write(item, String(i)) ?? 'null')
    return `[${items.join(',')}]`
  }
  const parts: string[] = []
  for (const [name, field] of Object.entries(value)) {
    const text = write(field, name)
    if (text !== undefined) parts.push(`${JSON.stringify(name)}:${text}`)
  }
  return `{${parts.join(',')}}`
}
