import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs'
import { crc32 } from 'node:zlib'
import { writeAll } from '../../common/sync-io'
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import { readU32BE } from '../../common/bytes'
import { StoreError } from '../../common/errors'
import { HEADER_SIZE, INDEX_ENTRY_SIZE, encodeDataHeader, encodeIndexHeader, writeU64 } from './header'
import { dataFileName, indexFileName } from './layout'
import { RECORD_HEADER_SIZE, MAX_STORED_VALUE_BYTES, writeRecordHeader } from './record'

/**
 * Writes one chunk's .index and .data files from records given in index order (sorted
 * by hash). Everything is appended through large buffers; the headers, which need the
 * final counts, are written last at offset 0. Synchronous on purpose: it runs in a
 * worker thread (or a Hadoop reducer) that has nothing else to do meanwhile.
 */
export interface ChunkIdentity {
  readonly store: string
  readonly version: number
  readonly nodeId: number
  readonly chunk: number
}

export interface ChunkStats {
  readonly chunk: number
  readonly records: number
  readonly indexSize: number
  readonly dataSize: number
}

const BUFFER_SIZE = 1 << 20

/** The id shared by a chunk's two files: MD5 of store, version, node and chunk. */
export function chunkFileId(id: ChunkIdentity): Buffer {
  return createHash('md5').update(`${id.store}\n${id.version}\n${id.nodeId}\n${id.chunk}`).digest()
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

  constructor(
    dir: string,
    private readonly id: ChunkIdentity,
    private readonly codecId: number,
  ) {
    this.indexFd = openSync(join(dir, indexFileName(id.chunk)), 'w')
    try {
      this.dataFd = openSync(join(dir, dataFileName(id.chunk)), 'w')
    } catch (err) {
      closeSync(this.indexFd)
      throw err
    }
  }

  /** Appends one record; `hash` is the key's 16-byte hash, `value` the stored bytes. */
  add(hash: Uint8Array, key: Uint8Array, value: Uint8Array): void {
    const hi = readU32BE(hash, 0)
    const lo = readU32BE(hash, 4)
    if (this.records > 0 && (hi < this.lastHi || (hi === this.lastHi && lo < this.lastLo))) {
      throw new RangeError('ChunkWriter.add: records must come in hash order')
    }
    if (value.length > MAX_STORED_VALUE_BYTES) {
      throw new StoreError('RO_BAD_INPUT', `value of ${value.length} bytes exceeds the ${MAX_STORED_VALUE_BYTES}-byte limit`)
    }
    this.lastHi = hi
    this.lastLo = lo
    const recordOffset = this.dataPos + this.dataUsed
    if (this.indexUsed + INDEX_ENTRY_SIZE > BUFFER_SIZE) this.flushIndex()
    const e = this.indexUsed
    for (let i = 0; i < 8; i++) this.indexBuf[e + i] = hash[i] as number
    writeU64(this.indexBuf, e + 8, recordOffset)
    this.indexUsed += INDEX_ENTRY_SIZE

    const size = RECORD_HEADER_SIZE + key.length + value.length
    if (this.dataUsed + size > BUFFER_SIZE) this.flushData()
    if (size > BUFFER_SIZE) {
      const head = Buffer.allocUnsafe(RECORD_HEADER_SIZE)
      writeRecordHeader(head, 0, key, value)
      this.writeData(head)
      this.writeData(key)
      this.writeData(value)
    } else {
      // Key and value land side by side, so one CRC call covers both.
      const at = this.dataUsed
      this.dataBuf.set(key, at + RECORD_HEADER_SIZE)
      this.dataBuf.set(value, at + RECORD_HEADER_SIZE + key.length)
      this.dataBuf.writeUInt32LE(key.length, at)
      this.dataBuf.writeUInt32LE(value.length, at + 4)
      this.dataBuf.writeUInt32LE(size === RECORD_HEADER_SIZE ? 0 : crc32(this.dataBuf.subarray(at + RECORD_HEADER_SIZE, at + size)), at + 8)
      this.dataUsed += size
    }
    this.records++
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
    fsyncSync(this.dataFd)
    fsyncSync(this.indexFd)
    this.close()
    return { chunk: this.id.chunk, records: this.records, indexSize: this.indexPos, dataSize }
  }

  /** Closes without finishing, after a failure; the caller removes the directory. */
  close(): void {
    closeSync(this.indexFd)
    closeSync(this.dataFd)
  }

  private flushIndex(): void {
    writeAll(this.indexFd, this.indexBuf.subarray(0, this.indexUsed), this.indexPos)
    this.indexPos += this.indexUsed
    this.indexUsed = 0
  }

  private flushData(): void {
    writeAll(this.dataFd, this.dataBuf.subarray(0, this.dataUsed), this.dataPos)
    this.dataPos += this.dataUsed
    this.dataUsed = 0
  }

  private writeData(b: Uint8Array): void {
    writeAll(this.dataFd, b, this.dataPos)
    this.dataPos += b.length
  }
}
