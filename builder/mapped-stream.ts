import { readU32BE } from '../common/bytes'
import { MAPPED_HEADER_SIZE, encodeMapped, mappedSize, type MappedRecord } from './mapped-record'

/**
 * Sorted mapped records as positions, not objects: after `next()` returns true, the
 * current record is encoded (mapped-record.ts layout) at `buf[at...]`. The reduce step
 * reads the fields it needs in place, so merging and reducing a bucket makes no object
 * and no Buffer view per record.
 */
export interface MappedStream {
  next(): boolean
  readonly buf: Buffer
  readonly at: number
  close(): void
}

/** Key length and value length of the record at `at`. */
export function keyLengthAt(buf: Uint8Array, at: number): number {
  return readU32BE(buf, at + 40)
}

export function valueLengthAt(buf: Uint8Array, at: number): number {
  return readU32BE(buf, at + 44)
}

/** compareWithinBucket on encoded records: hash, key, then input position (file, order). */
export function compareMappedAt(a: Buffer, x: number, b: Buffer, y: number): number {
  for (let i = 4; i < 20; i += 4) {
    const p = readU32BE(a, x + i)
    const q = readU32BE(b, y + i)
    if (p !== q) return p < q ? -1 : 1
  }
  const k = a.compare(
    b,
    y + MAPPED_HEADER_SIZE,
    y + MAPPED_HEADER_SIZE + keyLengthAt(b, y),
    x + MAPPED_HEADER_SIZE,
    x + MAPPED_HEADER_SIZE + keyLengthAt(a, x),
  )
  if (k !== 0) return k
  return readU32BE(a, x + 20) - readU32BE(b, y + 20) || a.readDoubleBE(x + 24) - b.readDoubleBE(y + 24)
}

/** sameKey on encoded records: equal hash and equal key bytes. */
export function sameKeyAt(a: Buffer, x: number, b: Buffer, y: number): boolean {
  for (let i = 4; i < 20; i++) if (a[x + i] !== b[y + i]) return false
  const n = keyLengthAt(a, x)
  if (n !== keyLengthAt(b, y)) return false
  const ka = x + MAPPED_HEADER_SIZE
  const kb = y + MAPPED_HEADER_SIZE
  if (n <= 32) {
    for (let i = 0; i < n; i++) if (a[ka + i] !== b[kb + i]) return false
    return true
  }
  return a.compare(b, kb, kb + n, ka, ka + n) === 0
}

/**
 * A MappedStream over MappedRecord objects (the Hadoop reducer's parsed shuffle lines):
 * each is encoded into one reused buffer, valid until the next call.
 */
export function streamOfRecords(records: Iterable<MappedRecord>): MappedStream {
  const it = records[Symbol.iterator]()
  let buf = Buffer.allocUnsafe(4096)
  return {
    get buf() {
      return buf
    },
    at: 0,
    next(): boolean {
      const r = it.next()
      if (r.done === true) return false
      const size = mappedSize(r.value)
      if (size > buf.length) buf = Buffer.allocUnsafe(Math.max(size, 2 * buf.length))
      encodeMapped(r.value, buf, 0)
      return true
    },
    close(): void {
      it.return?.()
    },
  }
}
