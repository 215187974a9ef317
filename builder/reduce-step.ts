import { StoreError } from '../common/errors'
import type { ChunkWriter } from '../formats/store/chunk-writer'
import type { DuplicatePolicy } from './build-options'
import { sameKey, type MappedRecord } from './mapped-record'

/**
 * The reduce step, shared by the local engine and Hadoop Streaming: the records of one
 * (node, chunk) bucket in sorted order in, one chunk's files out. Duplicates of a key are
 * adjacent, oldest input position first, so "first" and "last" need one record of look-behind.
 */
export interface ReduceResult {
  readonly records: number
  readonly duplicates: number
}

export function reduceBucket(
  records: Iterable<MappedRecord>,
  writer: ChunkWriter,
  policy: DuplicatePolicy,
  describeSource: (fileIndex: number, line: number) => string,
  /** True when every record's bytes stay valid after the next is pulled (shared-memory runs). */
  stableViews = false,
): ReduceResult {
  // Buffered readers reuse their buffers, so the look-behind record is copied into one
  // reusable buffer of its own (the writer copies it again when it is written).
  const held = stableViews ? { hold: (r: MappedRecord) => r } : new HeldRecord()
  let pending: MappedRecord | undefined
  let written = 0
  let duplicates = 0
  for (const r of records) {
    if (pending !== undefined && sameKey(pending, r)) {
      duplicates++
      if (policy === 'error') {
        throw new StoreError(
          'RO_DUPLICATE_KEY',
          `duplicate key ${showKey(r.key)}: ${describeSource(pending.fileIndex, pending.line)} and ${describeSource(r.fileIndex, r.line)} (use --on-duplicate first|last to keep one)`,
        )
      }
      if (policy === 'last') pending = held.hold(r)
      continue
    }
    if (pending !== undefined) {
      writer.add(pending.hash, pending.key, pending.value)
      written++
    }
    pending = held.hold(r)
  }
  if (pending !== undefined) {
    writer.add(pending.hash, pending.key, pending.value)
    written++
  }
  return { records: written, duplicates }
}

class HeldRecord {
  private buf = Buffer.allocUnsafe(4096)

  hold(r: MappedRecord): MappedRecord {
    const size = 16 + r.key.length + r.value.length
    if (size > this.buf.length) this.buf = Buffer.allocUnsafe(Math.max(size, this.buf.length * 2))
    const b = this.buf
    b.set(r.hash, 0)
    b.set(r.key, 16)
    b.set(r.value, 16 + r.key.length)
    return { ...r, hash: b.subarray(0, 16), key: b.subarray(16, 16 + r.key.length), value: b.subarray(16 + r.key.length, size) }
  }
}

/** A key for a message: text when it is printable UTF-8, hex otherwise; bounded. */
export function showKey(key: Uint8Array): string {
  const b = Buffer.from(key.buffer, key.byteOffset, key.byteLength)
  const text = b.toString('utf8')
  const printable = Buffer.from(text, 'utf8').equals(b) && !hasControlChar(text)
  const shown = printable ? JSON.stringify(text) : `0x${b.toString('hex')}`
  return shown.length > 120 ? `${shown.slice(0, 117)}...` : shown
}

function hasControlChar(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x20 || c === 0x7f) return true
  }
  return false
}
