import { StoreError } from '../common/errors'
import type { ChunkWriter } from '../formats/store/chunk/chunk-writer'
import type { DuplicatePolicy } from './build-options'
import { MAPPED_HEADER_SIZE, decodeMapped } from './mapped-record'
import { keyLengthAt, sameKeyAt, valueLengthAt, type MappedStream } from './mapped-stream'

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
  records: MappedStream,
  writer: ChunkWriter,
  policy: DuplicatePolicy,
  describeSource: (fileIndex: number, line: number) => string,
  /** True when every record's bytes stay valid after the next is pulled (shared-memory runs). */
  stableViews = false,
): ReduceResult {
  // Buffered readers reuse their buffers, so the look-behind record is copied into one
  // reusable buffer of its own (the writer copies it again when it is written).
  const held = new HeldRecord()
  let pBuf: Buffer | undefined
  let pAt = 0
  let written = 0
  let duplicates = 0
  const hold = (buf: Buffer, at: number): void => {
    if (stableViews) {
      pBuf = buf
      pAt = at
    } else {
      pBuf = held.hold(buf, at)
      pAt = 0
    }
  }
  const write = (buf: Buffer, at: number): void => {
    const keyLen = keyLengthAt(buf, at)
    const k = at + MAPPED_HEADER_SIZE
    writer.addFrom(buf, at + 4, k, keyLen, k + keyLen, valueLengthAt(buf, at))
    written++
  }
  try {
    while (records.next()) {
      const { buf, at } = records
      if (pBuf !== undefined && sameKeyAt(pBuf, pAt, buf, at)) {
        duplicates++
        if (policy === 'error') {
          const first = decodeMapped(pBuf, pAt)
          const second = decodeMapped(buf, at)
          throw new StoreError(
            'RO_DUPLICATE_KEY',
            `duplicate key ${showKey(second.key)}: ${describeSource(first.fileIndex, first.line)} and ${describeSource(second.fileIndex, second.line)} (use --on-duplicate first|last to keep one)`,
          )
        }
        if (policy === 'last') hold(buf, at)
        continue
      }
      if (pBuf !== undefined) write(pBuf, pAt)
      hold(buf, at)
    }
  } finally {
    records.close()
  }
  if (pBuf !== undefined) write(pBuf, pAt)
  return { records: written, duplicates }
}

/** One encoded record copied aside; two buffers, so holding a copy of the held one is safe. */
class HeldRecord {
  private bufs: Buffer[] = [Buffer.allocUnsafe(4096), Buffer.allocUnsafe(4096)]
  private i = 0

  hold(src: Buffer, at: number): Buffer {
    const size = MAPPED_HEADER_SIZE + keyLengthAt(src, at) + valueLengthAt(src, at)
    this.i ^= 1
    let b: Buffer = this.bufs[this.i] as Buffer
    if (size > b.length) {
      b = Buffer.allocUnsafe(Math.max(size, b.length * 2))
      this.bufs[this.i] = b
    }
    src.copy(b, 0, at, at + size)
    return b
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
