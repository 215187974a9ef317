import { open } from 'node:fs/promises'
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { createXXHash64 } from 'hash-wasm'
import { crc32 } from '../../common/crc32'
import { StoreError } from '../../common/errors'
import { SCAN_OFFSET, SCAN_OK, SCAN_ORDER, type IndexScan, type MappedFile } from '../../common/native'
import { HEADER_SIZE, INDEX_BLOCK_BYTES, INDEX_ENTRY_SIZE } from '../../formats/store/chunk/header'
import { RECORD_HEADER_SIZE } from '../../formats/store/chunk/record'

/**
 * JavaScript twins of the addon's file functions (common/native.ts), same signatures.
 * They read files into memory instead of mapping them, so they serve the tests that run
 * the mapped reader's logic over both implementations; production readers without the
 * addon use the pread reader instead (pread-reader.ts), which keeps only the index.
 */

/** Entries checked between two yields to the event loop. */
const SCAN_SLICE = 1 << 16

/** Reads the whole file into consecutive ArrayBuffers of at most `windowBytes`. */
export async function readFileWindows(path: string, _privateWritable: boolean, windowBytes: number): Promise<MappedFile> {
  let fh
  try {
    fh = await open(path, 'r')
  } catch (err) {
    throw new StoreError('RO_IO', `${path}: cannot open: ${(err as Error).message}`, { cause: err })
  }
  try {
    const { size } = await fh.stat()
    const windows: ArrayBuffer[] = []
    for (let at = 0; at < size; at += windowBytes) {
      const w = new Uint8Array(Math.min(windowBytes, size - at))
      let done = 0
      while (done < w.length) {
        const { bytesRead } = await fh.read(w, done, w.length - done, at + done)
        if (bytesRead === 0) throw new StoreError('RO_IO', `${path}: shorter than its size while being read`)
        done += bytesRead
      }
      windows.push(w.buffer)
    }
    return { size, windows }
  } finally {
    await fh.close()
  }
}

/** Twin of the native scanIndex: the same checks, in slices that yield to the event loop. */
export async function scanIndexJs(
  windows: readonly ArrayBufferLike[],
  entries: number,
  dataSize: number,
  radix: Uint32Array | null,
  radixBits: number,
  checksum: boolean,
  _willNeed: boolean,
  blockCrcs?: Uint32Array | null,
): Promise<IndexScan> {
  const windowBytes = windows[0]?.byteLength ?? 0
  const views = windows.map((w) => new DataView(w))
  const total = windows.reduce((n, w) => n + w.byteLength, 0)
  if (total < HEADER_SIZE || (total - HEADER_SIZE) / INDEX_ENTRY_SIZE < entries)
    throw new TypeError('scanIndex: the windows are shorter than the entries')
  let hex = ''
  if (checksum) {
    const h = await createXXHash64()
    h.init()
    for (const w of windows) {
      for (let at = 0; at < w.byteLength; at += SCAN_SLICE * INDEX_ENTRY_SIZE) {
        h.update(new Uint8Array(w, at, Math.min(SCAN_SLICE * INDEX_ENTRY_SIZE, w.byteLength - at)))
        await yieldToLoop()
      }
    }
    hex = h.digest('hex')
  }
  if (blockCrcs) {
    // Windows are multiples of 64 KiB, so no block straddles two of them.
    let b = 0
    for (const w of windows) {
      for (let at = 0; at < w.byteLength; at += INDEX_BLOCK_BYTES) {
        blockCrcs[b++] = crc32(new Uint8Array(w, at, Math.min(INDEX_BLOCK_BYTES, w.byteLength - at)), 0)
      }
      await yieldToLoop()
    }
  }
  let prevHi = 0
  let prevLo = 0
  let prevOffset = HEADER_SIZE - 1
  let nextBucket = 0
  const shift = 32 - radixBits
  for (let i = 0; i < entries; i++) {
    if (i % SCAN_SLICE === SCAN_SLICE - 1) await yieldToLoop()
    const at = HEADER_SIZE + i * INDEX_ENTRY_SIZE
    const v = views[Math.floor(at / windowBytes)] as DataView
    const local = at % windowBytes
    const hi = v.getUint32(local)
    const lo = v.getUint32(local + 4)
    const offLo = v.getUint32(local + 8, true)
    const offHi = v.getUint32(local + 12, true)
    const off = offHi * 0x100000000 + offLo
    if (i > 0 && (hi < prevHi || (hi === prevHi && lo < prevLo))) return { status: SCAN_ORDER, entry: i, checksum: hex }
    if (offHi >= 0x200000 || off <= prevOffset || off + RECORD_HEADER_SIZE > dataSize)
      return { status: SCAN_OFFSET, entry: i, checksum: hex }
    if (radix) {
      const b = hi >>> shift
      while (nextBucket <= b) radix[nextBucket++] = i
    }
    prevHi = hi
    prevLo = lo
    prevOffset = off
  }
  if (radix) while (nextBucket < radix.length) radix[nextBucket++] = entries
  return { status: SCAN_OK, entry: 0, checksum: hex }
}

/** Twin of prefetch: memory read from the file is resident already. */
export async function prefetchJs(windows: readonly ArrayBufferLike[]): Promise<number> {
  return windows.reduce((n, w) => n + w.byteLength, 0)
}

/** Twin of mapResident: memory read from the file is this process's own, nothing to map. */
export async function mapResidentJs(_windows: readonly ArrayBufferLike[]): Promise<number> {
  return 0
}

/** Twin of dropCache: plain JavaScript cannot advise the page cache. */
export function dropCacheJs(_path: string): boolean {
  return false
}

/** Twin of adviseRandom: the windows are ordinary memory, nothing to advise. */
export function adviseRandomJs(_windows: readonly ArrayBufferLike[]): number {
  return 0
}

/** Twin of refreshResidency: the windows were read into memory, so every page is resident. */
export async function refreshResidencyJs(_windows: readonly ArrayBufferLike[], vec: Uint8Array): Promise<number> {
  vec.fill(1)
  return vec.length
}

/** Twin of warmRecords: nothing to bring in. */
export async function warmRecordsJs(
  _files: readonly (readonly [readonly ArrayBufferLike[], Uint8Array])[],
  _ranges: Float64Array,
  _count: number,
): Promise<number> {
  return 0
}

/** Twin of lockPages: ordinary memory. */
export async function lockPagesJs(_windows: readonly ArrayBufferLike[]): Promise<number> {
  return 0
}
