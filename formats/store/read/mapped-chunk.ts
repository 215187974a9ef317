import { join } from 'node:path'
import { StoreError } from '../../../common/errors'
import { SCAN_OK, SCAN_ORDER, type LookupChunkSpec, type MappedFile } from '../../../common/native'
import { type ValueCodec } from '../chunk/codec'
import { HEADER_SIZE, INDEX_BLOCK_BYTES, INDEX_ENTRY_SIZE, corrupt, decodeDataHeader, decodeIndexHeader } from '../chunk/header'
import type { StoreMetadata } from '../layout/metadata'
import { chunkSlot, slotFileId, slotFileNames, slotHeaderChunk, type ChunkGeometry } from '../layout/partition-files'
import { RECORD_HEADER_SIZE } from '../chunk/record'
import type { ResidencyMap } from './residency'
import type { StoreOps } from './store-ops'
import type { Preload } from './store-reader-api'

/**
 * One chunk opened in 'mmap' mode: both files mapped, every header and size checked
 * before any other byte is read (a file shorter than its header says is refused here, so
 * no lookup can touch a page past its end), the index scanned off the event loop.
 */
export interface MappedChunk extends LookupChunkSpec {
  readonly indexFile: string
  readonly dataFile: string
}

export interface MappedChunkOptions {
  readonly verifyIndex: boolean
  readonly preload: Preload
  readonly windowBytes: number
  /** Hashes a key as the store's metadata says (md5, or a test hash). */
  readonly keyHash: (key: Uint8Array, out: Uint8Array) => void
  /** Cold reads on the pool: the data mapping is MADV_RANDOM and tracked here. */
  readonly residency: ResidencyMap | undefined
  /** The directory's chunk geometry (partition-files.ts chunkGeometry), for the first-key check. */
  readonly geometry: ChunkGeometry
}

/** Fewer entries than this get no radix table (interpolation alone is as good there). */
const RADIX_MIN_ENTRIES = 64
/**
 * Radix bits = floor(log2 n) - RADIX_SHIFT: buckets of 2^RADIX_SHIFT entries on average,
 * 4 bytes each, i.e. 4 / 2^RADIX_SHIFT bytes per record of native memory (not JS heap).
 * Measured in bench/lookup/lookup-bench.ts (docs/FORMAT.md "Lookup").
 */
export const RADIX_SHIFT = 5

export function radixBitsFor(entries: number): number {
  if (entries < RADIX_MIN_ENTRIES || entries > 0xffffffff) return 0
  return Math.min(24, Math.max(1, Math.floor(Math.log2(entries)) - RADIX_SHIFT))
}

export async function openMappedChunk(
  ops: StoreOps,
  dir: string,
  meta: StoreMetadata,
  slot: number,
  codec: ValueCodec,
  o: MappedChunkOptions,
): Promise<MappedChunk> {
  const names = slotFileNames(meta, slot)
  const indexFile = join(dir, names.index)
  const dataFile = join(dir, names.data)
  const expectedId = slotFileId(meta, slot)
  const chunk = slotHeaderChunk(meta, slot)
  // The index is never handed out: shared and read-only. Data views reach callers: a
  // private writable mapping turns a caller's write into a copied page, not a SIGSEGV.
  const index = await ops.mapFile(indexFile, false, o.windowBytes)
  const data = await ops.mapFile(dataFile, true, o.windowBytes)
  let resident: Uint8Array | null = null
  if (o.residency && data.size >= HEADER_SIZE) {
    // Random reads: a fault brings in its page, not megabytes of read-ahead around it.
    ops.adviseRandom(data.windows)
    resident = o.residency.track(data.windows, data.size, dataFile)
    // The header and the first record are read below on this thread: brought in first.
    await o.residency.warm(o.residency.fileCount - 1, 0, HEADER_SIZE, false)
  }

  const ih = decodeIndexHeader(headerOf(index, indexFile), indexFile)
  if (!ih.fileId.equals(expectedId) || ih.chunk !== chunk) corrupt(indexFile, `belongs to another store, version, node, partition or chunk`)
  if (ih.entryCount !== meta.chunkRecords[slot]) corrupt(indexFile, `${ih.entryCount} entries, metadata says ${meta.chunkRecords[slot]}`)
  if (index.size !== HEADER_SIZE + ih.entryCount * INDEX_ENTRY_SIZE)
    corrupt(indexFile, `size ${index.size} does not match ${ih.entryCount} entries`)
  if (data.size !== ih.dataSize) corrupt(dataFile, `size ${data.size}, the index says ${ih.dataSize}`)
  const dh = decodeDataHeader(headerOf(data, dataFile), dataFile)
  if (!dh.fileId.equals(expectedId) || dh.chunk !== chunk) corrupt(dataFile, `belongs to another store, version, node, partition or chunk`)
  if (dh.recordCount !== ih.entryCount) corrupt(dataFile, `${dh.recordCount} records, the index has ${ih.entryCount}`)
  if (dh.codec !== codec.id) corrupt(dataFile, `codec ${dh.codec} differs from the metadata's ${codec.name}`)

  const count = ih.entryCount
  let radixBits = 0
  let radix: Uint32Array | null = null
  let indexCrcs: Uint32Array | null = null
  if (o.verifyIndex || o.preload !== 'none') {
    radixBits = radixBitsFor(count)
    radix = radixBits > 0 ? new Uint32Array(2 ** radixBits + 1) : null
    const listed = meta.files.find((f) => f.name === names.index)
    const checksum = o.verifyIndex && listed !== undefined
    // Taken in the same pass as the checks: a lookup that finds no entry re-checks the
    // blocks it read against these, so an index damaged while live is never read as "absent".
    indexCrcs = new Uint32Array(Math.ceil(index.size / INDEX_BLOCK_BYTES))
    const scan = await ops.scanIndex(index.windows, count, data.size, radix, radixBits, checksum, o.preload !== 'none', indexCrcs)
    if (checksum && scan.checksum !== listed.checksum) {
      throw new StoreError('RO_CHECKSUM_MISMATCH', `${indexFile}: checksum does not match the metadata`)
    }
    if (scan.status === SCAN_ORDER) corrupt(indexFile, `entry ${scan.entry} is out of hash order`)
    if (scan.status !== SCAN_OK) corrupt(indexFile, `entry ${scan.entry} has a bad data offset`)
  }
  if (o.residency && o.preload !== 'none') o.residency.noteIndexLock(await ops.lockPages(index.windows))
  if (o.preload === 'all') await ops.prefetch(data.windows)
  // The data pages cached already (a version fetched or installed moments ago) are mapped
  // now, on the libuv pool, rather than faulted in one by one by the first reads.
  else if (o.preload === 'index') await ops.mapResident(data.windows)
  const spec: MappedChunk = {
    index: index.windows,
    count,
    data: data.windows,
    dataSize: data.size,
    radix,
    radixBits,
    resident,
    indexCrcs,
    indexFile,
    dataFile,
  }
  if (o.residency && resident && count > 0) await o.residency.warm(o.residency.fileCount - 1, firstRecordOffset(spec), 0, false)
  checkFirstKey(spec, slot, meta, o)
  return spec
}

/** The first 64 bytes (fewer if the file is shorter: the header decoder refuses those). */
function headerOf(f: MappedFile, file: string): Buffer {
  if (f.size < HEADER_SIZE) corrupt(file, `unexpected end of file at byte ${f.size}`)
  return Buffer.from(bytesAt(f.windows, 0, HEADER_SIZE))
}

/**
 * The key of the chunk's first record must hash to the first index entry and to this
 * chunk (see checkFirstKey in pread-reader.ts: it ties metadata's keyHash and chunks to
 * the files). O(1): one entry, one record header, one key.
 */
function checkFirstKey(c: MappedChunk, slot: number, meta: StoreMetadata, o: MappedChunkOptions): void {
  if (c.count === 0) return
  const entry = bytesAt(c.index, HEADER_SIZE, INDEX_ENTRY_SIZE)
  const offset = firstRecordOffset(c)
  if (offset < HEADER_SIZE || offset + RECORD_HEADER_SIZE > c.dataSize) corrupt(c.indexFile, `entry 0 has a bad data offset ${offset}`)
  const head = bytesAt(c.data, offset, RECORD_HEADER_SIZE)
  const keyLen = new DataView(head.buffer, head.byteOffset, head.byteLength).getUint32(0, true)
  if (offset + RECORD_HEADER_SIZE + keyLen > c.dataSize) corrupt(c.dataFile, `record at offset ${offset} runs past the end of the file`)
  const h = new Uint8Array(16)
  o.keyHash(bytesAt(c.data, offset + RECORD_HEADER_SIZE, keyLen), h)
  if (!h.subarray(0, 8).every((b, i) => b === entry[i]) || chunkSlot(h, o.geometry) !== slot) {
    corrupt(
      c.dataFile,
      `the first record's key does not hash to its index entry and chunk (metadata keyHash ${meta.keyHash}, ${meta.chunks} chunks)`,
    )
  }
}

/** The data offset index entry 0 names (NaN-free: past any file when the entry is damaged). */
function firstRecordOffset(c: MappedChunk): number {
  const entry = bytesAt(c.index, HEADER_SIZE, INDEX_ENTRY_SIZE)
  const ev = new DataView(entry.buffer, entry.byteOffset, entry.byteLength)
  const offHi = ev.getUint32(12, true)
  return offHi >= 0x200000 ? Number.MAX_SAFE_INTEGER : offHi * 0x100000000 + ev.getUint32(8, true)
}

/** `len` bytes at `offset` of a windowed file: a view, or a copy when they straddle two windows. */
export function bytesAt(windows: readonly ArrayBufferLike[], offset: number, len: number): Uint8Array {
  const w = windows[0]?.byteLength ?? 0
  const k = w === 0 ? 0 : Math.floor(offset / w)
  const local = offset - k * w
  const first = windows[k]
  if (first && local + len <= first.byteLength) return new Uint8Array(first, local, len)
  const copy = new Uint8Array(len)
  for (let done = 0; done < len;) {
    const at = offset + done
    const win = windows[Math.floor(at / w)]
    if (!win) throw new RangeError(`bytesAt: ${offset}+${len} is past the end`)
    const from = at % w
    const n = Math.min(len - done, win.byteLength - from)
    copy.set(new Uint8Array(win, from, n), done)
    done += n
  }
  return copy
}
