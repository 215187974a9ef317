import { closeSync, fstatSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { readU32BE } from '../../../common/bytes'
import { StoreError } from '../../../common/errors'
import { ReadBehind } from '../../../common/read-behind'
import { readFully } from '../chunk/chunk-reader'
import { HEADER_SIZE, INDEX_ENTRY_SIZE, writeU64 } from '../chunk/header'
import { RECORD_HEADER_SIZE, recordCrc } from '../chunk/record'
import type { KeyHasher } from '../layout/key-hash'
import { partitionDataFileName, partitionIndexFileName } from '../layout/partition-files'
import { compareRecordOrder } from '../scan/partition-records'
import type { HashedOutput } from './hashed-output'
import type { KeepResident } from './keep-resident'

/** An operation of the patch with its key's hash: a put (value given) or a delete. */
export interface HashedOp {
  readonly hash: Uint8Array
  readonly key: Buffer
  readonly value: Buffer | undefined
}

/** Base index entries read per block (16 bytes each), unless told. */
export const ENTRIES_PER_BLOCK = 1 << 16

/** The block of the last merge closed, for the next one (a fresh one costs page faults). */
let spareBlock: Buffer | undefined

/**
 * One chunk of a partition rebuilt from its base chunk and the patch's operations on it.
 * Unchanged records are never looked at one by one: between two operations the base's
 * data bytes are copied as one run (they are the build's bytes, CRCs included) and its
 * index entries as one run with their offsets shifted by what the patch inserted and
 * removed before them. An operation is placed by the base index's hash prefixes; only a
 * base record with the same prefix is read and its key hashed (a changed or removed key,
 * or a prefix collision).
 */
export class ChunkMerge {
  private readonly indexFd: number
  private readonly dataFd: number
  private readonly indexFile: string
  private readonly dataFile: string
  private readonly count: number
  private readonly dataEnd: number
  private readonly block: Buffer
  /** Entry number of block[0], and how many entries the block holds. */
  private first = 0
  private loaded = 0
  /** Next base entry not yet written out, and how far the base's data bytes are written out. */
  private next = 0
  private dataDone = HEADER_SIZE
  /** New offset minus base offset of the base records still to come. */
  private delta = 0
  private readonly scratch = Buffer.allocUnsafe(RECORD_HEADER_SIZE)
  private readonly indexBehind: ReadBehind | undefined
  private readonly dataBehind: ReadBehind | undefined
  private readonly entry = Buffer.alloc(INDEX_ENTRY_SIZE)
  private readonly head = Buffer.alloc(RECORD_HEADER_SIZE)
  private closed = false

  constructor(
    baseDir: string,
    partition: number,
    chunk: number,
    private readonly hasher: KeyHasher,
    private readonly index: HashedOutput,
    private readonly data: HashedOutput,
    dropBehind: boolean,
    /** A live base: its data file's pages left as they were found (keep-resident.ts). */
    private readonly keep: KeepResident | undefined,
    private readonly blockEntries = ENTRIES_PER_BLOCK,
  ) {
    const size = blockEntries * INDEX_ENTRY_SIZE
    this.block = spareBlock?.length === size ? spareBlock : Buffer.allocUnsafeSlow(size)
    spareBlock = undefined
    this.indexFile = join(baseDir, partitionIndexFileName(partition, chunk))
    this.dataFile = join(baseDir, partitionDataFileName(partition, chunk))
    this.indexFd = openSync(this.indexFile, 'r')
    try {
      this.dataFd = openSync(this.dataFile, 'r')
    } catch (err) {
      closeSync(this.indexFd)
      throw err
    }
    const entries = (fstatSync(this.indexFd).size - HEADER_SIZE) / INDEX_ENTRY_SIZE
    if (!Number.isSafeInteger(entries) || entries < 0) this.close(`${this.indexFile}: not a whole number of index entries`)
    this.count = entries
    this.dataEnd = fstatSync(this.dataFd).size
    this.indexBehind = dropBehind ? new ReadBehind(this.indexFd) : undefined
    this.dataBehind = dropBehind ? new ReadBehind(this.dataFd) : undefined
  }

  /** Applies one operation (in the chunk's record order); a delete must name a base record. */
  async apply(op: HashedOp): Promise<void> {
    const hi = readU32BE(op.hash, 0)
    const lo = readU32BE(op.hash, 4)
    let j = this.next
    let same = false
    for (; j < this.count; j++) {
      if (j >= this.first + this.loaded) {
        // Every entry before j is below the operation: out with them before the block moves on.
        await this.copyEntries(j)
        this.load(j)
      }
      const e = (j - this.first) * INDEX_ENTRY_SIZE
      const bhi = readU32BE(this.block, e)
      const blo = readU32BE(this.block, e + 4)
      if (bhi < hi || (bhi === hi && blo < lo)) continue
      if (bhi !== hi || blo !== lo) break
      const c = this.compareBase(j, op)
      if (c < 0) continue
      same = c === 0
      break
    }
    const at = j < this.count ? this.offsetOf(j) : this.dataEnd
    await this.copyEntries(j)
    await this.copyData(at)
    if (same) {
      const end = j + 1 < this.count ? this.offsetOf(j + 1) : this.dataEnd
      this.dataDone = end
      this.next = j + 1
      this.delta -= end - at
    } else if (op.value === undefined) {
      throw new StoreError('RO_CORRUPT', `patch deletes a key ${this.dataFile} does not hold`)
    }
    if (op.value !== undefined) await this.put(op)
  }

  /** Writes out the rest of the base chunk. */
  async finish(): Promise<void> {
    try {
      await this.copyEntries(this.count)
      await this.copyData(this.dataEnd)
    } finally {
      this.close()
    }
  }

  /** Closes the base files (once); with a reason, throws it as RO_CORRUPT. */
  close(reason?: string): void {
    if (this.closed) return
    this.closed = true
    this.indexBehind?.end()
    this.dataBehind?.end()
    this.keep?.end(this.dataFd)
    spareBlock = this.block
    closeSync(this.indexFd)
    closeSync(this.dataFd)
    if (reason !== undefined) throw new StoreError('RO_CORRUPT', reason)
  }

  private async put(op: HashedOp): Promise<void> {
    const value = op.value as Buffer
    this.entry.set(op.hash.subarray(0, 8), 0)
    writeU64(this.entry, 8, this.data.size)
    await this.index.append(this.entry)
    this.head.writeUInt32LE(op.key.length, 0)
    this.head.writeUInt32LE(value.length, 4)
    this.head.writeUInt32LE(recordCrc(op.key, value), 8)
    await this.data.append(this.head)
    await this.data.append(op.key)
    await this.data.append(value)
    this.delta += RECORD_HEADER_SIZE + op.key.length + value.length
  }

  /** Base entries from `next` up to `to`, offsets shifted; the block is reloaded from `next` when it lies elsewhere. */
  private async copyEntries(to: number): Promise<void> {
    while (this.next < to) {
      if (this.next < this.first || this.next >= this.first + this.loaded) this.load(this.next)
      const upTo = Math.min(to, this.first + this.loaded)
      await this.index.appendEntries(this.block, this.next - this.first, upTo - this.first, this.delta)
      this.next = upTo
    }
  }

  private async copyData(to: number): Promise<void> {
    if (to < this.dataDone || to > this.dataEnd) throw new StoreError('RO_CORRUPT', `${this.indexFile}: offsets out of order`)
    await this.data.appendFromFile(this.dataFd, this.dataDone, to - this.dataDone, this.dataFile)
    this.dataDone = to
    this.dataBehind?.passed(to)
    this.keep?.passed(this.dataFd, to)
  }

  private load(from: number): void {
    const n = Math.min(this.blockEntries, this.count - from)
    const pos = HEADER_SIZE + from * INDEX_ENTRY_SIZE
    readFully(this.indexFd, this.block.subarray(0, n * INDEX_ENTRY_SIZE), pos, this.indexFile)
    this.first = from
    this.loaded = n
    this.indexBehind?.passed(pos)
  }

  /** Base entry j's record offset; j must be loaded or loadable without losing unwritten entries. */
  private offsetOf(j: number): number {
    if (j < this.first || j >= this.first + this.loaded) this.load(j)
    const e = (j - this.first) * INDEX_ENTRY_SIZE + 8
    return this.block.readUInt32LE(e + 4) * 0x100000000 + this.block.readUInt32LE(e)
  }

  /** The base record j against the operation, in record order (full hash, then key): <0, 0 or >0. */
  private compareBase(j: number, op: HashedOp): number {
    const at = this.offsetOf(j)
    readFully(this.dataFd, this.scratch, at, this.dataFile)
    const key = Buffer.allocUnsafe(this.scratch.readUInt32LE(0))
    readFully(this.dataFd, key, at + RECORD_HEADER_SIZE, this.dataFile)
    return compareRecordOrder(this.hasher.hash(key), key, op.hash, op.key)
  }
}
