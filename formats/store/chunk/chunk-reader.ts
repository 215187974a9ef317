import { close, closeSync, fstat, open, read, readSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { StoreError } from '../../../common/errors'
import { createFileHasher } from './checksum'
import { type ValueCodec } from './codec'
import { HEADER_SIZE, INDEX_ENTRY_SIZE, corrupt, decodeDataHeader, decodeIndexHeader } from './header'
import type { StoreMetadata } from '../layout/metadata'
import { slotFileId, slotFileNames, slotHeaderChunk } from '../layout/partition-files'
import { RECORD_HEADER_SIZE } from './record'
import { radixTableFor, type IndexKeys, type RadixTable } from './search'

/**
 * One chunk held open: its index decoded into typed arrays (16 bytes per entry, the same
 * as on disk), its data file as a descriptor read with pread. Resident memory so grows
 * with the index, never with the data, which the page cache serves.
 */
export interface OpenChunk extends IndexKeys {
  readonly offsets: Float64Array
  readonly dataFd: number
  readonly dataSize: number
  readonly dataFile: string
  /** Bytes of the first read of a record (see readAheadFor). */
  readonly readAhead: number
}

/** Index bytes read and decoded per step: each step is one async read, then ~1 ms of decoding. */
const INDEX_READ_BLOCK = 1 << 20

const openAsync = promisify(open)
const closeAsync = promisify(close)
const fstatAsync = promisify(fstat)
const readAsync = promisify(read)

/** Opens chunk slot `slot` (partition-files.ts: the chunk number in format 1). */
export async function openChunk(dir: string, meta: StoreMetadata, slot: number, codec: ValueCodec, verify: boolean): Promise<OpenChunk> {
  const names = slotFileNames(meta, slot)
  const indexFile = join(dir, names.index)
  const dataFile = join(dir, names.data)
  const expectedId = slotFileId(meta, slot)
  const chunk = slotHeaderChunk(meta, slot)
  const listed = meta.files.find((f) => f.name === names.index)
  const hasher = verify ? await createFileHasher(meta.checksumAlgorithm) : undefined

  const indexFd = await openFile(indexFile)
  let keys: DecodedIndex
  try {
    const size = (await fstatAsync(indexFd)).size
    const head = Buffer.alloc(HEADER_SIZE)
    await readFullyAsync(indexFd, head, 0, indexFile)
    const header = decodeIndexHeader(head, indexFile)
    if (!header.fileId.equals(expectedId) || header.chunk !== chunk)
      corrupt(indexFile, `belongs to another store, version, node, partition or chunk`)
    if (header.entryCount !== meta.chunkRecords[slot])
      corrupt(indexFile, `${header.entryCount} entries, metadata says ${meta.chunkRecords[slot]}`)
    if (size !== HEADER_SIZE + header.entryCount * INDEX_ENTRY_SIZE)
      corrupt(indexFile, `size ${size} does not match ${header.entryCount} entries`)
    hasher?.update(head)
    keys = await decodeEntries(indexFd, header.entryCount, header.dataSize, indexFile, hasher)
    if (hasher && listed && hasher.digest() !== listed.checksum) {
      throw new StoreError('RO_CHECKSUM_MISMATCH', `${indexFile}: checksum does not match the metadata`)
    }
  } finally {
    await closeAsync(indexFd)
  }

  const dataFd = await openFile(dataFile)
  try {
    const size = (await fstatAsync(dataFd)).size
    if (size !== keys.dataSize) corrupt(dataFile, `size ${size}, the index says ${keys.dataSize}`)
    const head = Buffer.alloc(HEADER_SIZE)
    await readFullyAsync(dataFd, head, 0, dataFile)
    const header = decodeDataHeader(head, dataFile)
    if (!header.fileId.equals(expectedId) || header.chunk !== chunk)
      corrupt(dataFile, `belongs to another store, version, node, partition or chunk`)
    if (header.recordCount !== keys.hi.length) corrupt(dataFile, `${header.recordCount} records, the index has ${keys.hi.length}`)
    if (header.codec !== codec.id) corrupt(dataFile, `codec ${header.codec} differs from the metadata's ${codec.name}`)
    return { ...keys, dataFd, dataSize: size, dataFile, readAhead: readAheadFor(keys.hi.length, size) }
  } catch (err) {
    closeSync(dataFd)
    throw err
  }
}

/**
 * Reads all entries once, checking order and offset bounds so lookups can trust them.
 * Block by block with async reads, so the event loop runs between blocks.
 */
async function decodeEntries(
  fd: number,
  count: number,
  dataSize: number,
  file: string,
  hasher: { update(b: Uint8Array): void } | undefined,
): Promise<DecodedIndex> {
  const hi = new Uint32Array(count)
  const lo = new Uint32Array(count)
  const offsets = new Float64Array(count)
  const radix = radixTableFor(count)
  let nextBucket = 0
  const shift = 32 - (radix?.bits ?? 32)
  const block = Buffer.allocUnsafe(Math.min(INDEX_READ_BLOCK, Math.max(INDEX_ENTRY_SIZE, count * INDEX_ENTRY_SIZE)))
  const perBlock = Math.floor(block.length / INDEX_ENTRY_SIZE)
  let prevOffset = HEADER_SIZE - 1
  for (let first = 0; first < count; first += perBlock) {
    const n = Math.min(perBlock, count - first)
    const bytes = n * INDEX_ENTRY_SIZE
    await readFullyAsync(fd, block.subarray(0, bytes), HEADER_SIZE + first * INDEX_ENTRY_SIZE, file)
    hasher?.update(block.subarray(0, bytes))
    for (let j = 0; j < n; j++) {
      const at = j * INDEX_ENTRY_SIZE
      const i = first + j
      const h = block.readUInt32BE(at)
      const l = block.readUInt32BE(at + 4)
      const offHi = block.readUInt32LE(at + 12)
      const off = offHi * 0x100000000 + block.readUInt32LE(at + 8)
      if (i > 0 && (h < (hi[i - 1] as number) || (h === hi[i - 1] && l < (lo[i - 1] as number))))
        corrupt(file, `entry ${i} is out of hash order`)
      if (offHi >= 0x200000 || off <= prevOffset || off + RECORD_HEADER_SIZE > dataSize)
        corrupt(file, `entry ${i} has a bad data offset ${off}`)
      prevOffset = off
      hi[i] = h
      lo[i] = l
      offsets[i] = off
      if (radix) while (nextBucket <= h >>> shift) radix.starts[nextBucket++] = i
    }
  }
  if (radix) while (nextBucket < radix.starts.length) radix.starts[nextBucket++] = count
  return { hi, lo, offsets, dataSize, radix }
}

interface DecodedIndex {
  readonly hi: Uint32Array
  readonly lo: Uint32Array
  readonly offsets: Float64Array
  readonly dataSize: number
  readonly radix: RadixTable | undefined
}

async function openFile(file: string): Promise<number> {
  try {
    return await openAsync(file, 'r')
  } catch (err) {
    throw new StoreError('RO_IO', `${file}: cannot open: ${(err as Error).message}`, { cause: err })
  }
}

async function readFullyAsync(fd: number, buf: Buffer, position: number, file: string): Promise<void> {
  let done = 0
  while (done < buf.length) {
    const { bytesRead: n } = await readAsync(fd, buf, done, buf.length - done, position + done)
    if (n === 0) corrupt(file, `unexpected end of file at byte ${position + done}`)
    done += n
  }
}

/** Reads a file through once (preload 'all' without the addon): its pages land in the page cache. */
export async function warmFile(fd: number, size: number): Promise<void> {
  const block = Buffer.allocUnsafe(INDEX_READ_BLOCK)
  for (let at = 0; at < size; at += block.length) await readAsync(fd, block, 0, Math.min(block.length, size - at), at)
}

export function readFully(fd: number, buf: Buffer, position: number, file: string): void {
  let done = 0
  while (done < buf.length) {
    const n = readSync(fd, buf, done, buf.length - done, position + done)
    if (n === 0) corrupt(file, `unexpected end of file at byte ${position + done}`)
    done += n
  }
}

/**
 * First read per record: twice the chunk's mean record size, from 256 B to 4 KiB. A pread
 * costs more the more it copies, and most records of a chunk are near its mean, so
 * small-value stores need not copy 4 KiB.
 */
export function readAheadFor(records: number, dataSize: number): number {
  if (records === 0) return 256
  const mean = (dataSize - HEADER_SIZE) / records
  return Math.min(4096, Math.max(256, 2 ** Math.ceil(Math.log2(mean * 2))))
}
