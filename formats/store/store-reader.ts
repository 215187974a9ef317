import { closeSync, readSync } from 'node:fs'
import { readU32BE } from '../../common/bytes'
import { StoreError } from '../../common/errors'
import { chunkOf } from './layout'
import { openChunk, readFully, type OpenChunk } from './chunk-reader'
import { codecByName, type ValueCodec } from './codec'
import { corrupt } from './header'
import { createKeyHasher, keyBytes, type KeyHasher } from './key-hash'
import type { StoreMetadata } from './metadata'
import { readMetadata } from './metadata-io'
import { RECORD_HEADER_SIZE, recordCrc } from './record'
import { searchFn, type ProbeCounter, type SearchFn } from './search'
import type { OpenOptions, StoreReader } from './store-reader-api'

export type { OpenOptions, StoreReader } from './store-reader-api'

/** Largest first read of a record; records beyond it take a second read. */
const MAX_READ_AHEAD = 4096

export async function openStore(dir: string, opts: OpenOptions = {}): Promise<StoreReader> {
  const metadata = await readMetadata(dir)
  const hasher = await createKeyHasher(metadata.keyHash)
  const codec = codecByName(metadata.compression)
  const chunks: OpenChunk[] = []
  try {
    for (let c = 0; c < metadata.chunks; c++) {
      chunks.push(await openChunk(dir, metadata, c, codec, opts.verifyIndex ?? true))
      checkFirstKey(chunks[c] as OpenChunk, c, metadata.chunks, hasher)
    }
  } catch (err) {
    for (const ch of chunks) closeSync(ch.dataFd)
    throw err
  }
  return new ChunkedStoreReader(dir, metadata, chunks, hasher, codec, searchFn(opts.search ?? 'interpolation'))
}

class ChunkedStoreReader implements StoreReader {
  lastProbes = 0
  private readonly counter: ProbeCounter = { probes: 0 }
  // Never pooled (alloc, not allocUnsafe), so no other Buffer shares its memory.
  private readonly scratch = Buffer.alloc(MAX_READ_AHEAD)
  private closed = false

  constructor(
    readonly dir: string,
    readonly metadata: StoreMetadata,
    private readonly chunks: readonly OpenChunk[],
    private readonly hasher: KeyHasher,
    private readonly codec: ValueCodec,
    private readonly search: SearchFn,
  ) {}

  get(key: Uint8Array | string): Buffer | undefined {
    if (this.closed) throw new StoreError('RO_CONFLICT', `${this.dir}: reader is closed`)
    const kb = keyBytes(key)
    const hash = this.hasher.hash(kb)
    const chunk = this.chunks[chunkOf(hash, this.chunks.length)] as OpenChunk
    const targetHi = readU32BE(hash, 0)
    const targetLo = readU32BE(hash, 4)
    this.counter.probes = 0
    const pos = this.search(chunk, targetHi, targetLo, this.counter)
    this.lastProbes = this.counter.probes
    if (pos >= chunk.hi.length || chunk.hi[pos] !== targetHi || chunk.lo[pos] !== targetLo) return undefined
    const hit = this.readIfKey(chunk, chunk.offsets[pos] as number, kb, hash)
    if (hit !== undefined) return hit
    // Equal prefixes are hash collisions: the key stored in the data file decides.
    for (let i = pos - 1; i >= 0 && chunk.hi[i] === targetHi && chunk.lo[i] === targetLo; i--) {
      const value = this.readIfKey(chunk, chunk.offsets[i] as number, kb, hash)
      if (value !== undefined) return value
    }
    for (let i = pos + 1; i < chunk.hi.length && chunk.hi[i] === targetHi && chunk.lo[i] === targetLo; i++) {
      const value = this.readIfKey(chunk, chunk.offsets[i] as number, kb, hash)
      if (value !== undefined) return value
    }
    return undefined
  }

  getMany(keys: readonly (Uint8Array | string)[]): (Buffer | undefined)[] {
    return keys.map((k) => this.get(k))
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    for (const c of this.chunks) closeSync(c.dataFd)
  }

  /** One pread of the chunk's read-ahead covers header, key and a typical value. `hash` is the key's. */
  private readIfKey(chunk: OpenChunk, offset: number, key: Uint8Array, hash: Uint8Array): Buffer | undefined {
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
    if (recordCrc(storedKey, stored) !== buf.readUInt32LE(8)) corrupt(chunk.dataFile, `record at offset ${offset} fails its checksum`)
    if (!storedKey.equals(key)) return this.collision(chunk, offset, storedKey, hash)
    const value = this.codec.decode(stored)
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
    if (recordCrc(storedKey, buf.subarray(RECORD_HEADER_SIZE + keyLen, total)) !== buf.readUInt32LE(8)) {
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
function checkFirstKey(chunk: OpenChunk, c: number, chunks: number, hasher: KeyHasher): void {
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
  if (readU32BE(h, 0) !== chunk.hi[0] || readU32BE(h, 4) !== chunk.lo[0] || chunkOf(h, chunks) !== c) {
    corrupt(
      chunk.dataFile,
      `the first record's key does not hash to its index entry and chunk (metadata keyHash ${hasher.name}, ${chunks} chunks)`,
    )
  }
}
