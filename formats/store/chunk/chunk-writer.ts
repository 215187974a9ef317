import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs'
import { writeAll } from '../../../common/sync-io'
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import { batchHashes } from '../../../common/batch-hash'
import { readU32BE } from '../../../common/bytes'
import { StoreError } from '../../../common/errors'
import { HEADER_SIZE, INDEX_ENTRY_SIZE, encodeDataHeader, encodeIndexHeader, writeU64 } from './header'
import { dataFileName, indexFileName } from '../layout/layout'
import { partitionChunkFileId, partitionDataFileName, partitionIndexFileName } from '../layout/partition-files'
import { RECORD_HEADER_SIZE, MAX_STORED_VALUE_BYTES, writeRecordHeader } from './record'

/**
 * Writes one chunk's .index and .data files from records given in index order (sorted
 * by hash). Everything is appended through large buffers; the headers, which need the
 * final counts, are written last at offset 0. Synchronous on purpose: it runs in a
 * worker thread (or a Hadoop reducer) that has nothing else to do meanwhile.
 */
export type ChunkIdentity = NodeChunkIdentity | PartitionChunkIdentity

/** Format 1: chunk `chunk` of node `nodeId`'s directory, files `<chunk>.index|data`. */
export interface NodeChunkIdentity {
  readonly store: string
  readonly version: number
  readonly nodeId: number
  readonly chunk: number
}

/** Format 2: chunk `chunk` of partition `partition`, files `p<partition>-c<chunk>.index|data`. */
export interface PartitionChunkIdentity {
  readonly store: string
  readonly dataVersion: number
  readonly partition: number
  readonly chunk: number
}

export interface ChunkStats {
  readonly chunk: number
  readonly records: number
  readonly indexSize: number
  readonly dataSize: number
  /** Seconds spent filling CRCs and writing buffers, and in fsync (the build's stage table). */
  readonly writeSeconds: number
  readonly fsyncSeconds: number
}

const BUFFER_SIZE = 1 << 20

function writeU32LE(b: Buffer, at: number, v: number): void {
  b[at] = v & 0xff
  b[at + 1] = (v >>> 8) & 0xff
  b[at + 2] = (v >>> 16) & 0xff
  b[at + 3] = v >>> 24
}

/** The id shared by a chunk's two files: MD5 of store, version, node (or partition) and chunk. */
export function chunkFileId(id: ChunkIdentity): Buffer {
  if ('partition' in id) return partitionChunkFileId(id.store, id.dataVersion, id.partition, id.chunk)
  return createHash('md5').update(`${id.store}\n${id.version}\n${id.nodeId}\n${id.chunk}`).digest()
}

export function chunkFileNames(id: ChunkIdentity): { readonly index: string; readonly data: string } {
  if ('partition' in id)
    return { index: partitionIndexFileName(id.partition, id.chunk), data: partitionDataFileName(id.partition, id.chunk) }
  return { index: indexFileName(id.chunk), data: dataFileName(id.chunk) }
}

export class ChunkWriter {
  private readonly indexFd: number
  private readonly dataFd: number
  private readonly indexBuf = Buffer.allocUnsafe(BUFFER_SIZE)
  private readonly dataBuf = Buffer.allocUnsafe(BUFFER_SIZE)
  private indexUsed = 0
  private dataUsed = 0
  private indexPos = HEADER_SIZE
  private dataPos = HEADER_SIZE
  private records = 0
  private lastHi = 0
  private lastLo = 0
  /** Records in dataBuf whose CRC is still to be computed: [start, end) of key and value. */
  private crcStarts = new Uint32Array(4096)
  private crcEnds = new Uint32Array(4096)
  private crcs = new Uint32Array(4096)
  private crcCount = 0
  private writeSeconds = 0
  private readonly hashes = batchHashes()

  constructor(
    dir: string,
    private readonly id: ChunkIdentity,
    private readonly codecId: number,
  ) {
    const names = chunkFileNames(id)
    this.indexFd = openSync(join(dir, names.index), 'w')
    try {
      this.dataFd = openSync(join(dir, names.data), 'w')
    } catch (err) {
      closeSync(this.indexFd)
      throw err
    }
  }

  /** Appends one record; `hash` is the key's 16-byte hash, `value` the stored bytes. */
  add(hash: Uint8Array, key: Uint8Array, value: Uint8Array): void {
    const at = this.entry(hash, 0, key.length, value.length)
    if (at < 0) return this.addLarge(key, value)
    this.dataBuf.set(key, at + RECORD_HEADER_SIZE)
    this.dataBuf.set(value, at + RECORD_HEADER_SIZE + key.length)
  }

  /**
   * `add` from one buffer holding hash (16 bytes at `hashAt`), key and value: the reduce
   * step's way, with no view per record.
   */
  addFrom(src: Buffer, hashAt: number, keyAt: number, keyLength: number, valueAt: number, valueLength: number): void {
    const at = this.entry(src, hashAt, keyLength, valueLength)
    if (at < 0) return this.addLarge(src.subarray(keyAt, keyAt + keyLength), src.subarray(valueAt, valueAt + valueLength))
    const b = this.dataBuf
    const k = at + RECORD_HEADER_SIZE
    if (keyLength <= 32) for (let i = 0; i < keyLength; i++) b[k + i] = src[keyAt + i]!
    else src.copy(b, k, keyAt, keyAt + keyLength)
    src.copy(b, k + keyLength, valueAt, valueAt + valueLength)
  }

  /**
   * Checks order and size, writes the index entry and reserves the data record: its
   * offset in dataBuf, or -1 for a record larger than the buffer (written by addLarge).
   * The record's CRC is filled in for the whole buffer at once when it is flushed.
   */
  private entry(hash: Uint8Array, hashAt: number, keyLength: number, valueLength: number): number {
    const hi = readU32BE(hash, hashAt)
    const lo = readU32BE(hash, hashAt + 4)
    if (this.records > 0 && (hi < this.lastHi || (hi === this.lastHi && lo < this.lastLo))) {
      throw new RangeError('ChunkWriter.add: records must come in hash order')
    }
    if (valueLength > MAX_STORED_VALUE_BYTES) {
      throw new StoreError('RO_BAD_INPUT', `value of ${valueLength} bytes exceeds the ${MAX_STORED_VALUE_BYTES}-byte limit`)
    }
    this.lastHi = hi
    this.lastLo = lo
    this.records++
    const recordOffset = this.dataPos + this.dataUsed
    if (this.indexUsed + INDEX_ENTRY_SIZE > BUFFER_SIZE) this.flushIndex()
    const e = this.indexUsed
    for (let i = 0; i < 8; i++) this.indexBuf[e + i] = hash[hashAt + i] as number
    writeU64(this.indexBuf, e + 8, recordOffset)
    this.indexUsed += INDEX_ENTRY_SIZE

    const size = RECORD_HEADER_SIZE + keyLength + valueLength
    if (this.dataUsed + size > BUFFER_SIZE) this.flushData()
    if (size > BUFFER_SIZE) return -1
    const at = this.dataUsed
    const b = this.dataBuf
    writeU32LE(b, at, keyLength)
    writeU32LE(b, at + 4, valueLength)
    const n = this.crcCount
    if (n === this.crcStarts.length) this.growCrc()
    this.crcStarts[n] = at + RECORD_HEADER_SIZE
    this.crcEnds[n] = at + size
    this.crcCount = n + 1
    this.dataUsed += size
    return at
  }

  private addLarge(key: Uint8Array, value: Uint8Array): void {
    const head = Buffer.allocUnsafe(RECORD_HEADER_SIZE)
    writeRecordHeader(head, 0, key, value)
    this.writeData(head)
    this.writeData(key)
    this.writeData(value)
  }

  private growCrc(): void {
    const n = this.crcStarts.length * 2
    const starts = new Uint32Array(n)
    const ends = new Uint32Array(n)
    starts.set(this.crcStarts)
    ends.set(this.crcEnds)
    this.crcStarts = starts
    this.crcEnds = ends
    this.crcs = new Uint32Array(n)
  }

  /** Writes headers, fsyncs and closes both files. */
  finish(): ChunkStats {
    this.flushIndex()
    this.flushData()
    const fileId = chunkFileId(this.id)
    const dataSize = this.dataPos
    writeSync(
      this.dataFd,
      encodeDataHeader({ fileId, chunk: this.id.chunk, codec: this.codecId, recordCount: this.records }),
      0,
      HEADER_SIZE,
      0,
    )
    writeSync(this.indexFd, encodeIndexHeader({ fileId, chunk: this.id.chunk, entryCount: this.records, dataSize }), 0, HEADER_SIZE, 0)
    const t0 = process.hrtime.bigint()
    fsyncSync(this.dataFd)
    fsyncSync(this.indexFd)
    const fsyncSeconds = Number(process.hrtime.bigint() - t0) / 1e9
    this.close()
    return {
      chunk: this.id.chunk,
      records: this.records,
      indexSize: this.indexPos,
      dataSize,
      writeSeconds: this.writeSeconds,
      fsyncSeconds,
    }
  }

  /** Closes without finishing, after a failure; the caller removes the directory. */
  close(): void {
    closeSync(this.indexFd)
    closeSync(this.dataFd)
  }

  private flushIndex(): void {
    const t0 = process.hrtime.bigint()
    writeAll(this.indexFd, this.indexBuf.subarray(0, this.indexUsed), this.indexPos)
    this.writeSeconds += Number(process.hrtime.bigint() - t0) / 1e9
    this.indexPos += this.indexUsed
    this.indexUsed = 0
  }

  private flushData(): void {
    const t0 = process.hrtime.bigint()
    // One batch call for every record in the buffer: key and value lie side by side
    // after each header, so one range per record.
    const n = this.crcCount
    if (n > 0) {
      this.hashes.crc32Batch(this.dataBuf, this.crcStarts, this.crcEnds, n, this.crcs)
      for (let i = 0; i < n; i++) writeU32LE(this.dataBuf, this.crcStarts[i]! - 4, this.crcs[i]!)
      this.crcCount = 0
    }
    writeAll(this.dataFd, this.dataBuf.subarray(0, this.dataUsed), this.dataPos)
    this.dataPos += this.dataUsed
    this.dataUsed = 0
    this.writeSeconds += Number(process.hrtime.bigint() - t0) / 1e9
  }

  private writeData(b: Uint8Array): void {
    writeAll(this.dataFd, b, this.dataPos)
    this.dataPos += b.length
  }
}
