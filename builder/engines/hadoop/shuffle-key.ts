import { StoreError } from '../../../common/errors'
import type { MappedRecord } from '../../mapped-record'

/**
 * The text form of a MappedRecord on the Hadoop Streaming shuffle: one line
 *
 *   <bucket:8 hex>.<hash:32 hex><key:hex>.<fileIndex:8 hex><order:14 hex>\t<value:base64>\n
 *
 * - The shuffle key is everything before the tab (stream.num.map.output.key.fields=1).
 * - Its first '.'-separated field is the bucket alone, so KeyFieldBasedPartitioner with
 *   `-k1,1` and separator '.' sends all records of one (node, chunk) to one reducer.
 * - Byte order of keys (Hadoop's Text comparator, `LC_ALL=C sort`) equals compareMapped:
 *   fixed-width lowercase hex keeps numeric and byte order; the key's hex is followed by
 *   '.', which sorts below every hex digit, so a key sorts before the keys it prefixes.
 * - No key is a prefix of another and (bucket, fileIndex, order) is unique per record, so
 *   keys never tie and sorting whole lines gives the same order as sorting keys.
 * - Only [0-9a-f.] in the key and [A-Za-z0-9+/=] in the value: no tab, CR or LF, and
 *   nothing a UTF-8 decoder or a line reader could change.
 *
 * `line` is not carried: it only serves messages, and Hadoop gives mappers no line
 * numbers. The reducer reports positions by `order` (byte offset or row) instead.
 */
export const BUCKET_HEX = 8
export const HASH_HEX = 32
export const FILE_HEX = 8
export const ORDER_HEX = 14
/** Separator of key fields: the partitioner's mapreduce.map.output.key.field.separator. */
export const KEY_FIELD_SEPARATOR = '.'
/** First key field of the one statistics line every mapper emits (not hex: sorts after buckets). */
export const MAP_STATS_FIELD = 'stats'

const DOT = 0x2e
const TAB = 0x09
const NL = 0x0a
const MAX_ORDER = 2 ** 53

const HEX_CODES = new Uint8Array(512)
const HEX_VALUE = new Int8Array(256).fill(-1)
{
  const digits = '0123456789abcdef'
  for (let b = 0; b < 256; b++) {
    HEX_CODES[2 * b] = digits.charCodeAt(b >> 4)
    HEX_CODES[2 * b + 1] = digits.charCodeAt(b & 15)
  }
  for (let i = 0; i < 16; i++) HEX_VALUE[digits.charCodeAt(i)] = i
}

/** Bytes `shuffleLine` writes for `m`, newline included. */
export function shuffleLineSize(m: MappedRecord): number {
  return BUCKET_HEX + 1 + HASH_HEX + 2 * m.key.length + 1 + FILE_HEX + ORDER_HEX + 1 + 4 * Math.ceil(m.value.length / 3) + 1
}

/** Writes the line of `m` at `out[at]` (room for shuffleLineSize(m) bytes); returns the end. */
export function writeShuffleLine(m: MappedRecord, out: Buffer, at: number): number {
  if (!Number.isInteger(m.order) || m.order < 0 || m.order > MAX_ORDER)
    throw new RangeError(`record order ${m.order} is not an integer in 0..2^53`)
  let p = writeHexNumber(out, at, m.bucket, BUCKET_HEX)
  out[p++] = DOT
  p = writeHexBytes(out, p, m.hash)
  p = writeHexBytes(out, p, m.key)
  out[p++] = DOT
  p = writeHexNumber(out, p, m.fileIndex, FILE_HEX)
  // 14 hex digits = 56 bits: the high 24 and the low 32 separately (no 64-bit ints here).
  p = writeHexNumber(out, p, Math.floor(m.order / 2 ** 32), ORDER_HEX - 8)
  p = writeHexNumber(out, p, m.order % 2 ** 32, 8)
  out[p++] = TAB
  p += out.write(Buffer.from(m.value.buffer, m.value.byteOffset, m.value.byteLength).toString('base64'), p, 'latin1')
  out[p++] = NL
  return p
}

/** The line of `m` as a string without its newline: for tests and messages. */
export function shuffleLine(m: MappedRecord): string {
  const b = Buffer.allocUnsafe(shuffleLineSize(m))
  return b.toString('latin1', 0, writeShuffleLine(m, b, 0) - 1)
}

/**
 * The record of the line buf[s, e) (no newline). `line` is set to `order`, the position
 * messages can name. Hash, key and value are fresh buffers that `buf` may outlive.
 */
export function parseShuffleLine(buf: Uint8Array, s: number, e: number): MappedRecord {
  const bad = (why: string): never => {
    const shown = Buffer.from(buf.buffer, buf.byteOffset + s, Math.min(e - s, 120)).toString('latin1')
    throw new StoreError('RO_BAD_INPUT', `not a rostore shuffle line (${why}): ${JSON.stringify(shown)}`)
  }
  const tab = indexOfByte(buf, TAB, s, e)
  if (tab < 0) return bad('no tab')
  const keyEnd = s + BUCKET_HEX + 1 + HASH_HEX
  const tail = tab - FILE_HEX - ORDER_HEX - 1
  if (tail < keyEnd || buf[s + BUCKET_HEX] !== DOT || buf[tail] !== DOT || (tail - keyEnd) % 2 !== 0) return bad('bad key layout')
  const bucket = readHexNumber(buf, s, BUCKET_HEX)
  const hash = readHexBytes(buf, s + BUCKET_HEX + 1, 16)
  const key = readHexBytes(buf, keyEnd, (tail - keyEnd) / 2)
  const fileIndex = readHexNumber(buf, tail + 1, FILE_HEX)
  const hi = readHexNumber(buf, tail + 1 + FILE_HEX, ORDER_HEX - 8)
  const lo = readHexNumber(buf, tail + 1 + FILE_HEX + ORDER_HEX - 8, 8)
  if (bucket < 0 || hash === undefined || key === undefined || fileIndex < 0 || hi < 0 || lo < 0) return bad('bad hex')
  const order = hi * 2 ** 32 + lo
  if (order > MAX_ORDER) return bad('order out of range')
  const value = Buffer.from(Buffer.from(buf.buffer, buf.byteOffset + tab + 1, e - tab - 1).toString('latin1'), 'base64')
  return { bucket, hash, key, fileIndex, order, line: order, value }
}

/** The bucket of a record line, or -1 when the line's first field is not a bucket (a stats line). */
export function lineBucket(buf: Uint8Array, s: number, e: number): number {
  if (e - s <= BUCKET_HEX || buf[s + BUCKET_HEX] !== DOT) return -1
  return readHexNumber(buf, s, BUCKET_HEX)
}

/** Length of the shuffle key of the line at s (bytes before the tab), or -1 without a tab. */
export function shuffleKeyLength(buf: Uint8Array, s: number, e: number): number {
  const tab = indexOfByte(buf, TAB, s, e)
  return tab < 0 ? -1 : tab - s
}

/** The statistics line of one map task: routed like a record, recognised by its first field. */
export function mapStatsLine(taskId: string, json: string): string {
  return `${MAP_STATS_FIELD}${KEY_FIELD_SEPARATOR}${taskId.replace(/[^A-Za-z0-9_-]/g, '_')}\t${json}\n`
}

/** The JSON of a map statistics line buf[s, e), or undefined for any other line. */
export function parseMapStatsLine(buf: Uint8Array, s: number, e: number): string | undefined {
  const prefix = MAP_STATS_FIELD.length
  if (e - s <= prefix || buf[s + prefix] !== DOT) return undefined
  for (let i = 0; i < prefix; i++) if (buf[s + i] !== MAP_STATS_FIELD.charCodeAt(i)) return undefined
  const tab = indexOfByte(buf, TAB, s, e)
  if (tab < 0) return undefined
  return Buffer.from(buf.buffer, buf.byteOffset + tab + 1, e - tab - 1).toString('utf8')
}

function writeHexNumber(out: Uint8Array, at: number, n: number, width: number): number {
  if (!Number.isInteger(n) || n < 0 || n >= 16 ** width) throw new RangeError(`${n} does not fit in ${width} hex digits`)
  for (let i = width - 1; i >= 0; i--) {
    out[at + i] = HEX_CODES[2 * (n & 15) + 1]!
    n = Math.floor(n / 16)
  }
  return at + width
}

function writeHexBytes(out: Uint8Array, at: number, bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!
    out[at++] = HEX_CODES[2 * b]!
    out[at++] = HEX_CODES[2 * b + 1]!
  }
  return at
}

/** The number of `width` hex digits at `at`, or -1 if one is not a lowercase hex digit. */
function readHexNumber(buf: Uint8Array, at: number, width: number): number {
  let n = 0
  for (let i = 0; i < width; i++) {
    const v = HEX_VALUE[buf[at + i]!]!
    if (v < 0) return -1
    n = n * 16 + v
  }
  return n
}

function readHexBytes(buf: Uint8Array, at: number, length: number): Buffer | undefined {
  const out = Buffer.allocUnsafe(length)
  for (let i = 0; i < length; i++) {
    const hi = HEX_VALUE[buf[at + 2 * i]!]!
    const lo = HEX_VALUE[buf[at + 2 * i + 1]!]!
    if (hi < 0 || lo < 0) return undefined
    out[i] = (hi << 4) | lo
  }
  return out
}

function indexOfByte(buf: Uint8Array, byte: number, s: number, e: number): number {
  const i = buf.indexOf(byte, s)
  return i >= 0 && i < e ? i : -1
}
