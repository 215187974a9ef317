import { closeSync, fstatSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { readFully } from '../chunk/chunk-reader'
import { HEADER_SIZE, INDEX_ENTRY_SIZE, corrupt } from '../chunk/header'
import { RECORD_HEADER_SIZE, recordCrc } from '../chunk/record'
import { partitionDataFileName, partitionIndexFileName } from '../layout/partition-files'

/** Bytes per read(2) of the data file; the index is read in blocks of a quarter of it. */
const DATA_BLOCK_BYTES = 4 << 20
const INDEX_BLOCK_BYTES = 1 << 20

/**
 * One chunk of a format-2 partition walked in record order with its index: each record's
 * 8-byte hash prefix comes from its index entry, so nothing is hashed. Fields describe the
 * current record, in place in `data` (valid until the next `next()`), so a merge over
 * millions of records allocates nothing per record.
 *
 * Checked as it goes: prefixes non-decreasing, each entry pointing at the record right
 * after the previous one, the data ending with the last record. Record CRCs are not: a
 * caller checks (`checkCrc`) the records whose bytes it keeps without comparing them to
 * known-good ones.
 */
export class ChunkCursor {
  /** First and last 4 bytes of the hash prefix, big-endian: compared as numbers. */
  prefixHi = 0
  prefixLo = 0
  data: Buffer
  keyStart = 0
  keyEnd = 0
  valueEnd = 0
  /** The record header's CRC-32 of key and value. */
  crc = 0

  private readonly indexFd: number
  private readonly dataFd: number
  private readonly indexEnd: number
  private readonly dataEnd: number
  private readonly dataFile: string
  private index: Buffer
  /** File offsets of index[0] and data[0], and how many bytes of each hold file data. */
  private indexStart = HEADER_SIZE
  private indexLen = 0
  private dataStart = HEADER_SIZE
  private dataLen = 0
  /** Next index entry's file offset; next record's data offset. */
  private entryAt = HEADER_SIZE
  private recordAt = HEADER_SIZE

  constructor(dir: string, partition: number, chunk: number) {
    const indexFile = join(dir, partitionIndexFileName(partition, chunk))
    this.dataFile = join(dir, partitionDataFileName(partition, chunk))
    this.indexFd = openSync(indexFile, 'r')
    try {
      this.dataFd = openSync(this.dataFile, 'r')
    } catch (err) {
      closeSync(this.indexFd)
      throw err
    }
    this.indexEnd = fstatSync(this.indexFd).size
    this.dataEnd = fstatSync(this.dataFd).size
    if (this.indexEnd < HEADER_SIZE || (this.indexEnd - HEADER_SIZE) % INDEX_ENTRY_SIZE !== 0) {
      this.close()
      corrupt(indexFile, `size ${this.indexEnd} is not a whole number of index entries`)
    }
    this.index = Buffer.allocUnsafe(Math.max(INDEX_ENTRY_SIZE, Math.min(INDEX_BLOCK_BYTES, this.indexEnd - HEADER_SIZE)))
    this.data = Buffer.allocUnsafe(Math.max(RECORD_HEADER_SIZE, Math.min(DATA_BLOCK_BYTES, this.dataEnd - HEADER_SIZE)))
  }

  /** Moves to the next record; false past the last one (the files are then known to end there). */
  next(): boolean {
    if (this.entryAt >= this.indexEnd) {
      if (this.recordAt !== this.dataEnd) corrupt(this.dataFile, `${this.dataEnd - this.recordAt} bytes after the last indexed record`)
      return false
    }
    if (this.entryAt + INDEX_ENTRY_SIZE > this.indexStart + this.indexLen) {
      const n = Math.min(this.index.length, this.indexEnd - this.entryAt)
      readFully(this.indexFd, this.index.subarray(0, n), this.entryAt, this.dataFile)
      this.indexStart = this.entryAt
      this.indexLen = n
    }
    const e = this.entryAt - this.indexStart
    const x = this.index
    const hi = u32be(x, e)
    const lo = u32be(x, e + 4)
    if (this.entryAt > HEADER_SIZE && (hi < this.prefixHi || (hi === this.prefixHi && lo < this.prefixLo)))
      corrupt(this.dataFile, `index entry ${(this.entryAt - HEADER_SIZE) / INDEX_ENTRY_SIZE} is out of order`)
    const offset = u32le(x, e + 12) * 0x100000000 + u32le(x, e + 8)
    if (offset !== this.recordAt) corrupt(this.dataFile, `index entry points at ${offset}, the record is at ${this.recordAt}`)
    this.prefixHi = hi
    this.prefixLo = lo
    this.entryAt += INDEX_ENTRY_SIZE

    if (offset + RECORD_HEADER_SIZE > this.dataEnd) corrupt(this.dataFile, `record at ${offset} runs past the end of the file`)
    this.ensure(RECORD_HEADER_SIZE)
    let at = offset - this.dataStart
    const d = this.data
    const keyLen = u32le(d, at)
    const valueLen = u32le(d, at + 4)
    this.crc = u32le(d, at + 8)
    const total = RECORD_HEADER_SIZE + keyLen + valueLen
    if (offset + total > this.dataEnd) corrupt(this.dataFile, `record at ${offset} runs past the end of the file`)
    this.ensure(total)
    at = offset - this.dataStart
    this.keyStart = at + RECORD_HEADER_SIZE
    this.keyEnd = this.keyStart + keyLen
    this.valueEnd = this.keyEnd + valueLen
    this.recordAt = offset + total
    return true
  }

  key(): Buffer {
    return this.data.subarray(this.keyStart, this.keyEnd)
  }

  value(): Buffer {
    return this.data.subarray(this.keyEnd, this.valueEnd)
  }

  /** Throws RO_CORRUPT when the current record fails its CRC. */
  checkCrc(): void {
    if (recordCrc(this.key(), this.value()) !== this.crc) corrupt(this.dataFile, `record before ${this.recordAt} fails its checksum`)
  }

  close(): void {
    closeSync(this.indexFd)
    closeSync(this.dataFd)
  }

  /** Makes [recordAt, recordAt + need) readable in `data`: read from the record on, a whole block. */
  private ensure(need: number): void {
    const offset = this.recordAt
    if (offset + need <= this.dataStart + this.dataLen) return
    if (need > this.data.length) this.data = Buffer.allocUnsafe(need)
    const n = Math.min(this.data.length, this.dataEnd - offset)
    readFully(this.dataFd, this.data.subarray(0, n), offset, this.dataFile)
    this.dataStart = offset
    this.dataLen = n
  }
}

// Inline reads of 4 bytes the caller has checked are in `b`: Buffer's own readers, called
// seven times per record, did not inline into next() and showed in the merge's profile.
function u32le(b: Buffer, at: number): number {
  return ((b[at] as number) | ((b[at + 1] as number) << 8) | ((b[at + 2] as number) << 16)) + (b[at + 3] as number) * 0x1000000
}

function u32be(b: Buffer, at: number): number {
  return (b[at] as number) * 0x1000000 + (((b[at + 1] as number) << 16) | ((b[at + 2] as number) << 8) | (b[at + 3] as number))
}
