import { ReadBehind } from '../../../common/read-behind'
import { corrupt } from '../chunk/header'
import { readFully } from '../chunk/chunk-reader'
import { RECORD_HEADER_SIZE, recordCrc } from '../chunk/record'

export interface WalkedRecord {
  readonly offset: number
  /** Views valid until the next record is pulled. */
  readonly key: Buffer
  readonly value: Buffer
}

/** Bytes read per read(2) call of a walk. */
const WALK_BLOCK_BYTES = 1 << 20

/**
 * Data records from `start` to `end` of an open data file, each length- and CRC-checked.
 * The file is read in blocks of 1 MiB, not two reads per record: a million-record chunk
 * took 2 million read(2) calls, which made a full verify (and so every install) cost
 * seconds of system time on a busy disk.

 * `dropBehind`: each block leaves the page cache once the walk is past it (a fetched
 * version's verify must not evict the live version's hot pages; a dump of the live
 * version must not drop them, so it does not ask).
 */
export function* walkRecords(fd: number, start: number, end: number, file: string, dropBehind = false): Generator<WalkedRecord> {
  const behind = dropBehind ? new ReadBehind(fd, start) : undefined
  let buf = Buffer.alloc(Math.max(RECORD_HEADER_SIZE, Math.min(WALK_BLOCK_BYTES, end - start)))
  /** File offset of buf[0], and how many bytes of buf hold file data. */
  let bufStart = start
  let bufLen = 0
  let offset = start
  // Makes [offset, offset + need) readable in buf; the caller checked it lies before `end`.
  const ensure = (need: number): void => {
    if (offset >= bufStart && offset + need <= bufStart + bufLen) return
    if (need > buf.length) buf = Buffer.alloc(need)
    const n = Math.min(buf.length, end - offset)
    // What lies before this record is done with.
    behind?.passed(offset)
    readFully(fd, buf.subarray(0, n), offset, file)
    bufStart = offset
    bufLen = n
  }
  while (offset < end) {
    if (offset + RECORD_HEADER_SIZE > end) corrupt(file, `${end - offset} stray bytes after the last record`)
    ensure(RECORD_HEADER_SIZE)
    let at = offset - bufStart
    const keyLen = buf.readUInt32LE(at)
    const valueLen = buf.readUInt32LE(at + 4)
    const crc = buf.readUInt32LE(at + 8)
    const total = RECORD_HEADER_SIZE + keyLen + valueLen
    if (offset + total > end) corrupt(file, `record at ${offset} runs past the end of the file`)
    ensure(total)
    at = offset - bufStart + RECORD_HEADER_SIZE
    const key = buf.subarray(at, at + keyLen)
    const value = buf.subarray(at + keyLen, at + keyLen + valueLen)
    if (recordCrc(key, value) !== crc) corrupt(file, `record at ${offset} fails its checksum`)
    yield { offset, key, value }
    offset += total
  }
  behind?.end()
}
