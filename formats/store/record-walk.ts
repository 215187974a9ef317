import { corrupt } from './header'
import { readFully } from './chunk-reader'
import { RECORD_HEADER_SIZE, recordCrc } from './record'

export interface WalkedRecord {
  readonly offset: number
  /** Views valid until the next record is pulled. */
  readonly key: Buffer
  readonly value: Buffer
}

/** Data records from `start` to `end` of an open data file, each length- and CRC-checked. */
export function* walkRecords(fd: number, start: number, end: number, file: string): Generator<WalkedRecord> {
  const head = Buffer.alloc(RECORD_HEADER_SIZE)
  let body = Buffer.alloc(4096)
  let offset = start
  while (offset < end) {
    if (offset + RECORD_HEADER_SIZE > end) corrupt(file, `${end - offset} stray bytes after the last record`)
    readFully(fd, head, offset, file)
    const keyLen = head.readUInt32LE(0)
    const valueLen = head.readUInt32LE(4)
    const total = RECORD_HEADER_SIZE + keyLen + valueLen
    if (offset + total > end) corrupt(file, `record at ${offset} runs past the end of the file`)
    if (body.length < keyLen + valueLen) body = Buffer.alloc(keyLen + valueLen)
    const bytes = body.subarray(0, keyLen + valueLen)
    readFully(fd, bytes, offset + RECORD_HEADER_SIZE, file)
    const key = bytes.subarray(0, keyLen)
    const value = bytes.subarray(keyLen)
    if (recordCrc(key, value) !== head.readUInt32LE(8)) corrupt(file, `record at ${offset} fails its checksum`)
    yield { offset, key, value }
    offset += total
  }
}
