import { open, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../../common/errors'
import { versionCodec } from '../chunk/dictionary-file'
import { codecByName } from '../chunk/codec'
import { HEADER_SIZE } from '../chunk/header'
import type { StoreMetadata } from '../layout/metadata'
import { slotFileNames } from '../layout/partition-files'
import { slotCount } from '../layout/slots'
import { batchHashes } from '../../../common/batch-hash'
import { RECORD_HEADER_SIZE } from '../chunk/record'

/**
 * Walking a version directory's records in file order, filtered by master partition,
 * with async reads only (a server streams with it: nothing blocks the event loop).
 *
 * A record's master partition is `u32be(hash[0..4]) mod P`; the index holds every
 * record's 8-byte hash prefix in file order, so the filter reads the index, never hashes
 * a key. Index and data are read forward in blocks of 1 MiB; records of other partitions
 * are skipped over inside a block, and a gap longer than a block is skipped by reading
 * the next block where the next wanted record starts (no seek per record).
 */
export interface OpenVersion {
  readonly dir: string
  readonly meta: StoreMetadata
  /** Index and data handle of every chunk slot (partition-files.ts; = chunk in format 1), opened before anything is streamed. */
  readonly chunks: readonly { readonly index: FileHandle; readonly data: FileHandle; readonly dataSize: number }[]
  close(): Promise<void>
}

const BLOCK = 1 << 20
const ENTRY = 16

/**
 * Opens every chunk file of a version directory at once. Holding them open is what keeps
 * a stream on ONE version: retention may delete the directory meanwhile (Linux keeps the
 * files of open descriptors), and the stream still reads what it started with.
 */
export async function openVersion(dir: string, meta: StoreMetadata): Promise<OpenVersion> {
  const handles: FileHandle[] = []
  const chunks: { index: FileHandle; data: FileHandle; dataSize: number }[] = []
  const close = async (): Promise<void> => {
    await Promise.all(handles.splice(0).map((h) => h.close().catch(() => undefined)))
  }
  try {
    for (let s = 0; s < slotCount(meta); s++) {
      const names = slotFileNames(meta, s)
      const index = await open(join(dir, names.index), 'r')
      handles.push(index)
      const data = await open(join(dir, names.data), 'r')
      handles.push(data)
      chunks.push({ index, data, dataSize: (await data.stat()).size })
    }
  } catch (err) {
    await close()
    throw err
  }
  return { dir, meta, chunks, close }
}

export interface WalkOptions {
  /** Master partitions wanted (ids below `partitionCount`); all when undefined. */
  readonly partitions?: ReadonlySet<number>
  readonly partitionCount: number
  /** Values are decoded with the version's codec unless false (keys-only walks skip them). */
  readonly values?: boolean
  /** Values as the version stores them, not decoded (a dump of stored values). */
  readonly stored?: boolean
  /** Only this chunk slot (diffs merge the slots, each a sorted run); default all, in order. */
  readonly chunk?: number
  /** Bytes per read of each file (default 1 MiB): memory is about twice this per walk. */
  readonly blockBytes?: number
  /** Record bytes per batch at most (default 64 KiB): the CPU burst between two awaits. */
  readonly batchBytes?: number
  readonly signal?: AbortSignal
}

export type WalkItem =
  | { readonly chunk: number; readonly key?: undefined; readonly value?: undefined; readonly prefix?: undefined }
  | {
      readonly chunk: number
      readonly key: Buffer
      readonly value: Buffer
      /** The record's 8-byte hash prefix from the index (records are sorted by it in a chunk). */
      readonly prefix: Buffer
    }

/** A forward reader of one file in blocks: `peek` answers from the block in hand, `load` reads a new one. */
class BlockReader {
  private buf: Buffer
  private start = 0
  private len = 0

  constructor(
    private readonly fh: FileHandle,
    private readonly end: number,
    private readonly name: string,
    block: number,
  ) {
    this.buf = Buffer.allocUnsafe(Math.max(64, Math.min(block, end)))
  }

  /** The block in hand (valid until the next load). */
  get block(): Buffer {
    return this.buf
  }

  /** Where file offset `at` lies in `block` when [at, at + n) is all there; -1 when not. */
  find(at: number, n: number): number {
    return at < this.start || at + n > this.start + this.len ? -1 : at - this.start
  }

  /** Reads the block starting at `at` (views handed out before are overwritten); 0, where `at` lies in `block`. */
  async load(at: number, n: number): Promise<number> {
    if (at + n > this.end) throw corrupt(this.name, `read of ${n} bytes at ${at} runs past the end of the file`)
    if (n > this.buf.length) this.buf = Buffer.allocUnsafe(n)
    const want = Math.min(this.buf.length, this.end - at)
    let got = 0
    while (got < want) {
      const { bytesRead } = await this.fh.read(this.buf, got, want - got, at + got)
      if (bytesRead === 0) throw corrupt(this.name, `file ends at ${at + got}, before ${at + want}`)
      got += bytesRead
    }
    this.start = at
    this.len = want
    return 0
  }
}

function corrupt(file: string, why: string): StoreError {
  return new StoreError('RO_CORRUPT', `${file}: ${why}`)
}

/**
 * Records of one chunk that lie in the blocks in hand, as offsets (no object per record):
 * record i's key is `data[keyAt[i], keyAt[i] + keyLen[i])`, its stored value follows the
 * key (`valueLen[i]` bytes; `values[i]` holds it decoded when the store is compressed), its
 * 8-byte hash prefix is `index[entryAt[i], entryAt[i] + 8)`. Valid until the next pull.
 */
export interface WalkBatch {
  readonly chunk: number
  /** True for the first batch of a chunk (it may hold no record). */
  readonly first: boolean
  readonly count: number
  readonly data: Buffer
  readonly index: Buffer
  readonly keyAt: readonly number[]
  readonly keyLen: readonly number[]
  readonly valueLen: readonly number[]
  readonly entryAt: readonly number[]
  /** Decoded values, when the version's codec is not `none` and values are wanted. */
  readonly values: readonly Buffer[] | undefined
}

/**
 * Records, and bytes of keys and values, gathered into one batch at most: bounds the work
 * between two awaits. A stream's consumer throttles and writes about every 64 KiB, so a
 * batch is a short burst of CPU on a core the serving loops share (larger batches showed
 * in the p99 of live reads: RESULTS section 4d).
 */
const MAX_BATCH = 4096
const MAX_BATCH_BYTES = 64 << 10

/**
 * The records of the wanted partitions, chunk by chunk in file order, in batches: every
 * record that lies in the index and data blocks in hand is taken without an await, and a
 * batch ends where a new block must be read. Per record the cost is a few integer reads:
 * no promise and no Buffer object per record (both made streams of small records several
 * times slower), and the CRCs of a batch are one call (the addon's crc32Batch, or its
 * JavaScript twin). Every record's length and CRC are checked: a damaged record ends the
 * walk with RO_CORRUPT.
 */
export async function* walkBatches(v: OpenVersion, opts: WalkOptions): AsyncGenerator<WalkBatch> {
  const codec = opts.stored === true ? codecByName('none') : await versionCodec(v.dir, v.meta)
  const decode = opts.values !== false && codec.name !== 'none'
  const P = opts.partitionCount
  const block = opts.blockBytes ?? BLOCK
  const maxBatchBytes = opts.batchBytes ?? MAX_BATCH_BYTES
  const { crc32Batch } = batchHashes()
  const regionStart = new Uint32Array(MAX_BATCH)
  const regionEnd = new Uint32Array(MAX_BATCH)
  const crcWant = new Uint32Array(MAX_BATCH)
  const crcGot = new Uint32Array(MAX_BATCH)
  const recordAt: number[] = []
  if (opts.chunk !== undefined && !(Number.isInteger(opts.chunk) && opts.chunk >= 0 && opts.chunk < v.chunks.length)) {
    throw new RangeError(`chunk ${opts.chunk} is not a chunk of this version (0..${v.chunks.length - 1})`)
  }
  for (let c = opts.chunk ?? 0; c < (opts.chunk ?? v.chunks.length - 1) + 1; c++) {
    const files = v.chunks[c] as OpenVersion['chunks'][number]
    const dataName = `chunk ${c} data`
    // Format 2: a slot is one partition's chunk, so one whose partition is not wanted is skipped unread.
    const held = v.meta.held
    const skip = held !== undefined && opts.partitions !== undefined && !opts.partitions.has(held[Math.floor(c / v.meta.chunks)] as number)
    const count = skip ? 0 : (v.meta.chunkRecords[c] ?? 0)
    const index = new BlockReader(files.index, HEADER_SIZE + count * ENTRY, `chunk ${c} index`, block)
    const data = new BlockReader(files.data, files.dataSize, dataName, block)
    let first = true
    let i = 0
    while (i < count || first) {
      opts.signal?.throwIfAborted()
      const keyAt: number[] = []
      const keyLen: number[] = []
      const valueLen: number[] = []
      const entryAt: number[] = []
      const values: Buffer[] | undefined = decode ? [] : undefined
      let batchBytes = 0
      recordAt.length = 0
      // A load overwrites the blocks the batch points into: it happens only while the batch is empty.
      for (; i < count && keyAt.length < MAX_BATCH && batchBytes < maxBatchBytes; i++) {
        const at = HEADER_SIZE + i * ENTRY
        let e = index.find(at, ENTRY)
        if (e < 0) {
          if (keyAt.length > 0) break
          e = await index.load(at, ENTRY)
        }
        const ib = index.block
        if (opts.partitions && !opts.partitions.has(ib.readUInt32BE(e) % P)) continue
        const offset = ib.readUInt32LE(e + 8) + ib.readUInt32LE(e + 12) * 0x1_0000_0000
        let h = data.find(offset, RECORD_HEADER_SIZE)
        if (h < 0) {
          if (keyAt.length > 0) break
          h = await data.load(offset, RECORD_HEADER_SIZE)
        }
        const db = data.block
        const kl = db.readUInt32LE(h)
        const vl = db.readUInt32LE(h + 4)
        const crc = db.readUInt32LE(h + 8)
        const total = RECORD_HEADER_SIZE + kl + vl
        let r = data.find(offset, total)
        if (r < 0) {
          if (keyAt.length > 0) break
          r = await data.load(offset, total)
        }
        const k = r + RECORD_HEADER_SIZE
        // Key and stored value are adjacent: their CRC is checked below, for the whole batch.
        const n = keyAt.length
        regionStart[n] = k
        regionEnd[n] = k + kl + vl
        crcWant[n] = crc
        recordAt.push(offset)
        keyAt.push(k)
        keyLen.push(kl)
        valueLen.push(opts.values === false ? 0 : vl)
        entryAt.push(e)
        batchBytes += kl + vl
      }
      // Every record of a batch lies in the data block in hand (loads happen only between batches).
      crc32Batch(data.block, regionStart, regionEnd, keyAt.length, crcGot)
      for (let j = 0; j < keyAt.length; j++)
        if (crcGot[j] !== crcWant[j]) throw corrupt(dataName, `record at ${recordAt[j] as number} fails its checksum`)
      if (values) {
        for (let j = 0; j < keyAt.length; j++) {
          const v = (keyAt[j] as number) + (keyLen[j] as number)
          values.push(codec.decode(data.block.subarray(v, regionEnd[j])))
        }
      }
      yield { chunk: c, first, count: keyAt.length, data: data.block, index: index.block, keyAt, keyLen, valueLen, entryAt, values }
      first = false
    }
  }
}

/** The records of walkBatches one by one, each chunk announced by an item with only `chunk`. */
export async function* walkPartitions(v: OpenVersion, opts: WalkOptions): AsyncGenerator<WalkItem> {
  for await (const b of walkBatches(v, opts)) {
    if (b.first) yield { chunk: b.chunk }
    for (let i = 0; i < b.count; i++) {
      const k = b.keyAt[i] as number
      const kl = b.keyLen[i] as number
      const e = b.entryAt[i] as number
      yield {
        chunk: b.chunk,
        key: b.data.subarray(k, k + kl),
        value: b.values ? (b.values[i] as Buffer) : b.data.subarray(k + kl, k + kl + (b.valueLen[i] as number)),
        prefix: b.index.subarray(e, e + 8),
      }
    }
  }
}
