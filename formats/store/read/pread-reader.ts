import { closeSync, read, readSync } from 'node:fs'
import { readU32BE } from '../../../common/bytes'
import { StoreError } from '../../../common/errors'
import { openChunk, readFully, warmFile, type OpenChunk } from '../chunk/chunk-reader'
import type { ValueCodec } from '../chunk/codec'
import { versionCodec } from '../chunk/dictionary-file'
import { corrupt, decodeIn } from '../chunk/header'
import { createKeyHasher, keyBytes, type KeyHasher } from '../layout/key-hash'
import type { StoreMetadata } from '../layout/metadata'
import { chunkGeometry, chunkSlot, type ChunkGeometry } from '../layout/partition-files'
import { RECORD_HEADER_SIZE, recordCrc } from '../chunk/record'
import { slotCount } from '../layout/slots'
import { searchFn, type ProbeCounter, type SearchFn, type SearchStrategy } from '../chunk/search'
import {
  storedValuesOf,
  type AccessMode,
  type FrameSink,
  type Preload,
  type ResidencyStats,
  type ServingReader,
  type StoredValues,
  type ValueFraming,
} from './store-reader-api'
import { writeFramed, writeFramedInto, writeValueInto } from '../chunk/value-framing'

/** Largest first read of a record; records beyond it take a second read. */
const MAX_READ_AHEAD = 4096

/**
 * Opens a node directory in 'pread' mode (either format): every chunk slot's index decoded into typed arrays
 * (in async blocks, see chunk-reader.ts), every data file held open as a descriptor.
 */
export async function openPreadStore(dir: string, metadata: StoreMetadata, o: PreadOptions): Promise<ServingReader> {
  const hasher = await createKeyHasher(metadata.keyHash)
  const codec = await versionCodec(dir, metadata)
  const geometry = chunkGeometry(metadata)
  const chunks: OpenChunk[] = []
  try {
    for (let s = 0; s < slotCount(metadata); s++) {
      const chunk = await openChunk(dir, metadata, s, codec, o.verifyIndex)
      chunks.push(chunk)
      checkFirstKey(chunk, s, geometry, hasher)
      if (o.preload === 'all') await warmFile(chunk.dataFd, chunk.dataSize)
    }
  } catch (err) {
    for (const ch of chunks) closeSync(ch.dataFd)
    throw err
  }
  return new PreadStoreReader(dir, metadata, chunks, geometry, hasher, codec, searchFn(o.search), o.verifyRecords)
}

export interface PreadOptions {
  readonly search: SearchStrategy
  readonly verifyIndex: boolean
  readonly verifyRecords: boolean
  readonly preload: Preload
}

class PreadStoreReader implements ServingReader {
  readonly accessMode: AccessMode = 'pread'
  lastProbes = 0
  private readonly counter: ProbeCounter = { probes: 0 }
  // Never pooled (alloc, not allocUnsafe), so no other Buffer shares its memory.
  private readonly scratch = Buffer.alloc(MAX_READ_AHEAD)
  private closed = false
  /** Async pre-reads in flight: the descriptors close only once they are done. */
  private prereads = 0

  constructor(
    readonly dir: string,
    readonly metadata: StoreMetadata,
    private readonly chunks: readonly OpenChunk[],
    private readonly geometry: ChunkGeometry,
    private readonly hasher: KeyHasher,
    private readonly codec: ValueCodec,
    private readonly search: SearchFn,
    private readonly verifyRecords: boolean,
  ) {}

  get(key: Uint8Array | string): Buffer | undefined {
    return this.getOne(key, true)
  }

  getMany(keys: readonly (Uint8Array | string)[]): (Buffer | undefined)[] {
    return this.readMany(keys, true)
  }

  getStored(key: Uint8Array | string): Buffer | undefined {
    return this.getOne(key, false)
  }

  getManyStored(keys: readonly (Uint8Array | string)[]): (Buffer | undefined)[] {
    return this.readMany(keys, false)
  }

  storedValues(): StoredValues {
    return storedValuesOf(this.metadata, this.codec)
  }

  /** get(), the value decompressed or (`decode` false) as stored. */
  private getOne(key: Uint8Array | string, decode: boolean): Buffer | undefined {
    if (this.closed) throw new StoreError('RO_CONFLICT', `${this.dir}: reader is closed`)
    const kb = keyBytes(key)
    return this.find(kb, this.hasher.hash(kb), decode)
  }

  /** getMany() with getOne's `decode`: keys in index order (chunk slot, then hash prefix), answers in request order. */
  private readMany(keys: readonly (Uint8Array | string)[], decode: boolean): (Buffer | undefined)[] {
    if (this.closed) throw new StoreError('RO_CONFLICT', `${this.dir}: reader is closed`)
    const n = keys.length
    const bytes = keys.map(keyBytes)
    const hashes = bytes.map((k) => this.hasher.hash(k))
    // A key of a partition not held (-1) is absent: sorted first, answered without a read.
    const chunkOfKey = hashes.map((h) => chunkSlot(h, this.geometry))
    const order = Array.from({ length: n }, (_, i) => i)
    order.sort((a, b) => {
      const ha = hashes[a] as Uint8Array
      const hb = hashes[b] as Uint8Array
      return (
        (chunkOfKey[a] as number) - (chunkOfKey[b] as number) ||
        readU32BE(ha, 0) - readU32BE(hb, 0) ||
        readU32BE(ha, 4) - readU32BE(hb, 4) ||
        a - b
      )
    })
    const values = new Array<Buffer | undefined>(n)
    let firstError: { at: number; err: unknown } | undefined
    for (const i of order) {
      try {
        values[i] = this.find(bytes[i] as Uint8Array, hashes[i] as Uint8Array, decode)
      } catch (err) {
        // The error of the first damaged key in request order, as one get() per key would throw.
        if (!firstError || i < firstError.at) firstError = { at: i, err }
      }
    }
    if (firstError) throw firstError.err
    return values
  }

  async getAsync(key: Uint8Array | string): Promise<Buffer | undefined> {
    await this.preread([key])
    return this.get(key)
  }

  async getManyAsync(keys: readonly (Uint8Array | string)[]): Promise<(Buffer | undefined)[]> {
    await this.preread(keys)
    return this.getMany(keys)
  }

  /** No residency map in this mode: servers read synchronously, as they always did here. */
  warm(_keys: readonly (Uint8Array | string)[]): Promise<void> | undefined {
    return undefined
  }

  residency(): ResidencyStats | undefined {
    return undefined
  }

  getManyFramed(keys: readonly (Uint8Array | string)[], framing: ValueFraming): Buffer
  getManyFramed(keys: readonly (Uint8Array | string)[], framing: ValueFraming, maxBytes: number): Buffer | undefined
  getManyFramed(keys: readonly (Uint8Array | string)[], framing: ValueFraming, maxBytes?: number): Buffer | undefined {
    return writeFramed(framing, keys.length, this.getMany(keys), undefined, maxBytes)
  }

  getFramedInto(key: Uint8Array | string, framing: ValueFraming, sink: FrameSink): boolean
  getFramedInto(key: Uint8Array | string, framing: ValueFraming, sink: FrameSink, ifResident: true): boolean | undefined
  getFramedInto(key: Uint8Array | string, framing: ValueFraming, sink: FrameSink): boolean | undefined {
    return writeValueInto(sink, framing, this.get(key))
  }

  /** `ifResident` changes nothing here: there is no residency map (see warm). */
  getManyFramedInto(keys: readonly (Uint8Array | string)[], framing: ValueFraming, sink: FrameSink, maxBytes?: number): number {
    return writeFramedInto(sink, framing, keys.length, this.getMany(keys), undefined, maxBytes)
  }

  private find(kb: Uint8Array, hash: Uint8Array, decode: boolean): Buffer | undefined {
    const slot = chunkSlot(hash, this.geometry)
    if (slot < 0) return undefined
    const chunk = this.chunks[slot] as OpenChunk
    const targetHi = readU32BE(hash, 0)
    const targetLo = readU32BE(hash, 4)
    this.counter.probes = 0
    const pos = this.search(chunk, targetHi, targetLo, this.counter)
    this.lastProbes = this.counter.probes
    if (pos >= chunk.hi.length || chunk.hi[pos] !== targetHi || chunk.lo[pos] !== targetLo) return undefined
    const hit = this.readIfKey(chunk, chunk.offsets[pos] as number, kb, hash, decode)
    if (hit !== undefined) return hit
    // Equal prefixes are hash collisions: the key stored in the data file decides.
    for (let i = pos - 1; i >= 0 && chunk.hi[i] === targetHi && chunk.lo[i] === targetLo; i--) {
      const value = this.readIfKey(chunk, chunk.offsets[i] as number, kb, hash, decode)
      if (value !== undefined) return value
    }
    for (let i = pos + 1; i < chunk.hi.length && chunk.hi[i] === targetHi && chunk.lo[i] === targetLo; i++) {
      const value = this.readIfKey(chunk, chunk.offsets[i] as number, kb, hash, decode)
      if (value !== undefined) return value
    }
    return undefined
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    if (this.prereads === 0) this.closeFiles()
  }

  private closeFiles(): void {
    for (const c of this.chunks) closeSync(c.dataFd)
  }

  /**
   * Reads the first bytes of each key's record (as find() would) on the libuv pool, so
   * that the synchronous lookup that follows finds them in the page cache. The bytes are
   * not used: find() reads and checks the record again.
   */
  private async preread(keys: readonly (Uint8Array | string)[]): Promise<void> {
    if (this.closed) throw new StoreError('RO_CONFLICT', `${this.dir}: reader is closed`)
    const reads: Promise<void>[] = []
    for (const key of keys) {
      const hash = this.hasher.hash(keyBytes(key))
      const slot = chunkSlot(hash, this.geometry)
      if (slot < 0) continue
      const chunk = this.chunks[slot] as OpenChunk
      const pos = this.search(chunk, readU32BE(hash, 0), readU32BE(hash, 4), this.counter)
      if (pos >= chunk.hi.length) continue
      const offset = chunk.offsets[pos] as number
      const n = Math.min(chunk.readAhead, Math.max(0, chunk.dataSize - offset))
      if (n === 0) continue
      reads.push(new Promise((resolve) => read(chunk.dataFd, Buffer.allocUnsafe(n), 0, n, offset, () => resolve())))
    }
    if (reads.length === 0) return
    this.prereads++
    try {
      await Promise.all(reads)
    } finally {
      if (--this.prereads === 0 && this.closed) this.closeFiles()
    }
  }

  /** One pread of the chunk's read-ahead covers header, key and a typical value. `hash` is the key's. */
  private readIfKey(chunk: OpenChunk, offset: number, key: Uint8Array, hash: Uint8Array, decode: boolean): Buffer | undefined {
    const avail = chunk.dataSize - offset
    let buf = this.scratch
    const got = readSync(chunk.dataFd, buf, 0, Math.min(chunk.readAhead, avail), offset)
    if (got < RECORD_HEADER_SIZE) corrupt(chunk.dataFile, `short read at offset ${offset}`)
    const keyLen = buf.readUInt32LE(0)
    const valueLen = buf.readUInt32LE(4)
    const total = RECORD_HEADER_SIZE + keyLen + valueLen
    if (total > avail) corrupt(chunk.dataFile, `record at offset ${offset} runs past the end of the file`)
    if (keyLen !== key.length) return this.checkedMiss(chunk, offset, buf, got, total, hash)
    if (total > got) {
      buf = Buffer.allocUnsafe(total)
      readFully(chunk.dataFd, buf, offset, chunk.dataFile)
    }
    const storedKey = buf.subarray(RECORD_HEADER_SIZE, RECORD_HEADER_SIZE + keyLen)
    const stored = buf.subarray(RECORD_HEADER_SIZE + keyLen, total)
    if (this.verifyRecords && recordCrc(storedKey, stored) !== buf.readUInt32LE(8))
      corrupt(chunk.dataFile, `record at offset ${offset} fails its checksum`)
    if (!storedKey.equals(key)) return this.collision(chunk, offset, storedKey, hash)
    const value = decode ? decodeIn(this.codec, stored, chunk.dataFile, offset + RECORD_HEADER_SIZE + keyLen) : stored
    // The scratch buffer is reused by the next lookup: hand out a copy.
    return value.buffer === this.scratch.buffer ? Buffer.from(value) : value
  }

  /** A different key under the same prefix: still verify it, so corruption is never a miss. */
  private checkedMiss(chunk: OpenChunk, offset: number, buf: Buffer, got: number, total: number, hash: Uint8Array): undefined {
    if (total > got) {
      buf = Buffer.allocUnsafe(total)
      readFully(chunk.dataFd, buf, offset, chunk.dataFile)
    }
    const keyLen = buf.readUInt32LE(0)
    const storedKey = buf.subarray(RECORD_HEADER_SIZE, RECORD_HEADER_SIZE + keyLen)
    if (this.verifyRecords && recordCrc(storedKey, buf.subarray(RECORD_HEADER_SIZE + keyLen, total)) !== buf.readUInt32LE(8)) {
      corrupt(chunk.dataFile, `record at offset ${offset} fails its checksum`)
    }
    return this.collision(chunk, offset, storedKey, hash)
  }

  /**
   * The record holds another key than the one looked up. That is a hash prefix collision
   * only if its key has the same 8-byte prefix; otherwise the data is damaged in a way the
   * record CRC cannot see (a zeroed header reads as a valid empty record), and answering
   * "absent" would be a wrong answer.
   */
  private collision(chunk: OpenChunk, offset: number, storedKey: Uint8Array, hash: Uint8Array): undefined {
    const h = this.hasher.hash(storedKey)
    if (readU32BE(h, 0) !== readU32BE(hash, 0) || readU32BE(h, 4) !== readU32BE(hash, 4)) {
      corrupt(chunk.dataFile, `record at offset ${offset} holds a key that does not belong to its index entry`)
    }
    return undefined
  }
}

/**
 * The key of a chunk's first record must hash, with the metadata's key hash, to the
 * first index entry and to this chunk. One read per chunk at open ties `keyHash` and
 * `chunks` of metadata.json (which no checksum covers) to the files: edited, they would
 * otherwise make lookups miss keys that are there.
 */
function checkFirstKey(chunk: OpenChunk, slot: number, geometry: ChunkGeometry, hasher: KeyHasher): void {
  if (chunk.hi.length === 0) return
  const offset = chunk.offsets[0] as number
  const head = Buffer.alloc(RECORD_HEADER_SIZE)
  readFully(chunk.dataFd, head, offset, chunk.dataFile)
  const keyLen = head.readUInt32LE(0)
  if (offset + RECORD_HEADER_SIZE + keyLen > chunk.dataSize)
    corrupt(chunk.dataFile, `record at offset ${offset} runs past the end of the file`)
  const key = Buffer.alloc(keyLen)
  readFully(chunk.dataFd, key, offset + RECORD_HEADER_SIZE, chunk.dataFile)
  const h = hasher.hash(key)
  if (readU32BE(h, 0) !== chunk.hi[0] || readU32BE(h, 4) !== chunk.lo[0] || chunkSlot(h, geometry) !== slot) {
    corrupt(
      chunk.dataFile,
      `the first record's key does not hash to its index entry and chunk (metadata keyHash ${hasher.name}, ${geometry.chunks} chunks${geometry.partitionCount === undefined ? '' : ` per partition, ${geometry.partitionCount} partitions`})`,
    )
  }
}
