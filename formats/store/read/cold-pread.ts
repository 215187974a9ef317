import { closeSync, openSync, read, readSync } from 'node:fs'
import type { ValueCodec } from '../chunk/codec'
import { RECORD_HEADER_SIZE } from '../chunk/record'
import { decodeIn } from '../chunk/header'
import type { ResidencyMap } from './residency'

/** Bytes read at a record's start when its length is not known yet (its header page was cold). */
const MAX_FIRST_READ = 64 * 1024

/** A record's bytes as read from its data file, or why they cannot answer the lookup alone. */
type ColdRecord = { readonly key: Buffer; readonly stored: Buffer; readonly crc: number } | 'unusable'

/**
 * The cold reads of a mapped reader's getAsync: the record's bytes with one pread (through
 * the addon's io_uring where the reader warms through it, else on the libuv pool), answered
 * from those bytes, instead of a warm-up that faults the pages into
 * the mapping and a second lookup through it (one system call and no page-table work per
 * read; the pages land in the page cache all the same). The data files are opened at the
 * first cold read and closed once the reader is closed and no read is in flight.
 */
export class ColdPreads {
  private readonly fds: (number | undefined)[] = []
  private inFlight = 0
  private closed = false

  /**
   * `files`: each chunk's data file and size; `expect`: the bytes of its average record,
   * read at once when a lookup does not know the record's length.
   */
  constructor(
    private readonly files: readonly { readonly path: string; readonly size: number; readonly expect: number }[],
    private readonly o: {
      /** Counts the reads and marks the pages they bring in. */
      readonly map: ResidencyMap | undefined
      readonly codec: ValueCodec
      /** The records' checksum, when they are checked (verifyRecords). */
      readonly crc32: ((src: Uint8Array, initial: number) => number) | undefined
      /** pread through the addon's io_uring (cold-io.ts), else fs.read on the libuv pool. */
      readonly readAt?: ((fd: number, buf: Uint8Array, position: number) => Promise<number>) | undefined
    },
  ) {}

  /**
   * The value of `key` from its record at `offset` of chunk `chunk` (`length` bytes, 0
   * when not known), or 'unusable' when the bytes read do not answer alone (another key
   * under the same hash prefix, a damaged record): the caller then takes the mapped path,
   * which resolves collisions and reports damage as get() does.
   */
  async value(key: Buffer, chunk: number, offset: number, length: number): Promise<Buffer | 'unusable'> {
    this.o.map?.readStarted()
    let rec: ColdRecord = 'unusable'
    try {
      rec = await this.read(chunk, offset, length)
    } finally {
      this.readDone(chunk, offset, rec)
    }
    return this.answer(key, rec, chunk, offset)
  }

  /** value() on the caller's thread: the synchronous get's cold read (one pread, one device request). */
  valueSync(key: Buffer, chunk: number, offset: number, length: number): Buffer | 'unusable' {
    this.o.map?.readStarted()
    let rec: ColdRecord = 'unusable'
    try {
      rec = this.readSync(chunk, offset, length)
    } finally {
      this.readDone(chunk, offset, rec)
    }
    return this.answer(key, rec, chunk, offset)
  }

  /** The record at `offset` of chunk `chunk`; 'unusable' when the bytes read are not a whole record. */
  private async read(chunk: number, offset: number, length: number): Promise<ColdRecord> {
    const first = this.firstRead(chunk, offset, length)
    if (first === 0) return 'unusable'
    let buf = await this.pread(chunk, first, offset)
    const total = recordLength(buf, this.room(chunk, offset))
    if (total === Infinity) return 'unusable'
    if (buf.length < total) {
      // Longer than expected: the rest with a second read.
      const rest = await this.pread(chunk, total - buf.length, offset + buf.length)
      if (rest.length < total - buf.length) return 'unusable'
      buf = Buffer.concat([buf, rest])
    }
    return recordParts(buf, total)
  }

  /** read() on the caller's thread. */
  private readSync(chunk: number, offset: number, length: number): ColdRecord {
    const first = this.firstRead(chunk, offset, length)
    if (first === 0) return 'unusable'
    let buf = this.preadSync(chunk, first, offset)
    const total = recordLength(buf, this.room(chunk, offset))
    if (total === Infinity) return 'unusable'
    if (buf.length < total) {
      const rest = this.preadSync(chunk, total - buf.length, offset + buf.length)
      if (rest.length < total - buf.length) return 'unusable'
      buf = Buffer.concat([buf, rest])
    }
    return recordParts(buf, total)
  }

  /** Bytes to read first at `offset`: the record's length when known, else the average record's; 0 when nothing can be read. */
  private firstRead(chunk: number, offset: number, length: number): number {
    const file = this.files[chunk]
    if (!file || this.closed || offset + RECORD_HEADER_SIZE > file.size) return 0
    const first = length > 0 ? length : Math.min(MAX_FIRST_READ, Math.max(RECORD_HEADER_SIZE, file.expect))
    return Math.min(first, file.size - offset)
  }

  private room(chunk: number, offset: number): number {
    return (this.files[chunk] as { size: number }).size - offset
  }

  private readDone(chunk: number, offset: number, rec: ColdRecord): void {
    this.o.map?.readDone(chunk, offset, rec === 'unusable' ? 0 : RECORD_HEADER_SIZE + rec.key.length + rec.stored.length)
  }

  private answer(key: Buffer, rec: ColdRecord, chunk: number, offset: number): Buffer | 'unusable' {
    if (rec === 'unusable' || !rec.key.equals(key)) return 'unusable'
    const crc32 = this.o.crc32
    if (crc32 && crc32(rec.stored, crc32(rec.key, 0)) !== rec.crc) return 'unusable'
    if (this.o.codec.name === 'none') return rec.stored
    const file = (this.files[chunk] as { path: string }).path
    return decodeIn(this.o.codec, rec.stored, file, offset + RECORD_HEADER_SIZE + rec.key.length)
  }

  close(): void {
    this.closed = true
    this.closeIfIdle()
  }

  private fd(chunk: number): number {
    let fd = this.fds[chunk]
    if (fd === undefined) fd = this.fds[chunk] = openSync((this.files[chunk] as { path: string }).path, 'r')
    return fd
  }

  private preadSync(chunk: number, length: number, position: number): Buffer {
    const buf = Buffer.allocUnsafe(length)
    return buf.subarray(0, readSync(this.fd(chunk), buf, 0, length, position))
  }

  private pread(chunk: number, length: number, position: number): Promise<Buffer> {
    const fd = this.fd(chunk)
    this.inFlight++
    const buf = Buffer.allocUnsafe(length)
    const readAt = this.o.readAt
    if (readAt) {
      const done = (): void => {
        this.inFlight--
        this.closeIfIdle()
      }
      return readAt(fd, buf, position).then(
        (n) => {
          done()
          return buf.subarray(0, n)
        },
        (err: unknown) => {
          done()
          throw err
        },
      )
    }
    return new Promise<Buffer>((resolve, reject) => {
      read(fd, buf, 0, length, position, (err, n) => {
        this.inFlight--
        this.closeIfIdle()
        if (err) reject(err)
        else resolve(buf.subarray(0, n))
      })
    })
  }

  private closeIfIdle(): void {
    if (!this.closed || this.inFlight > 0) return
    for (const fd of this.fds) if (fd !== undefined) closeSync(fd)
    this.fds.length = 0
  }
}

/** The length of the record at the start of `buf` (its header read), or Infinity when it cannot be one (short, past `room`). */
function recordLength(buf: Buffer, room: number): number {
  if (buf.length < RECORD_HEADER_SIZE) return Infinity
  const total = RECORD_HEADER_SIZE + buf.readUInt32LE(0) + buf.readUInt32LE(4)
  return total > room ? Infinity : total
}

/** The parts of the whole record of `total` bytes at the start of `buf`. */
function recordParts(buf: Buffer, total: number): ColdRecord {
  const keyLength = buf.readUInt32LE(0)
  return {
    key: buf.subarray(RECORD_HEADER_SIZE, RECORD_HEADER_SIZE + keyLength),
    stored: buf.subarray(RECORD_HEADER_SIZE + keyLength, total),
    crc: buf.readUInt32LE(8),
  }
}
