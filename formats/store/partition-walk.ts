import { open, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../common/errors'
import { codecByName } from './codec'
import { HEADER_SIZE } from './header'
import { dataFileName, indexFileName } from './layout'
import type { StoreMetadata } from './metadata'
import { RECORD_HEADER_SIZE, recordCrc } from './record'

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
  /** Index and data handle of every chunk, opened before anything is streamed. */
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
    for (let c = 0; c < meta.chunks; c++) {
      const index = await open(join(dir, indexFileName(c)), 'r')
      handles.push(index)
      const data = await open(join(dir, dataFileName(c)), 'r')
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
  /** Only this chunk (diffs merge the chunks, each a sorted run); default all, in order. */
  readonly chunk?: number
  /** Bytes per read of each file (default 1 MiB): memory is about twice this per walk. */
  readonly blockBytes?: number
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

/** A forward reader of one file in blocks; `view(at, n)` is valid until the next call. */
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

  async view(at: number, n: number): Promise<Buffer> {
    if (at < this.start || at + n > this.start + this.len) {
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
    }
    return this.buf.subarray(at - this.start, at - this.start + n)
  }
}

function corrupt(file: string, why: string): StoreError {
  return new StoreError('RO_CORRUPT', `${file}: ${why}`)
}

/**
 * The records of the wanted partitions, chunk by chunk in file order; before each chunk's
 * records an item with only `chunk`. Key and value views are valid until the next pull.
 * Every record's length and CRC are checked: a damaged record ends the walk with RO_CORRUPT.
 */
export async function* walkPartitions(v: OpenVersion, opts: WalkOptions): AsyncGenerator<WalkItem> {
  const codec = codecByName(v.meta.compression)
  const P = opts.partitionCount
  const block = opts.blockBytes ?? BLOCK
  if (opts.chunk !== undefined && !(Number.isInteger(opts.chunk) && opts.chunk >= 0 && opts.chunk < v.chunks.length)) {
    throw new RangeError(`chunk ${opts.chunk} is not a chunk of this version (0..${v.chunks.length - 1})`)
  }
  for (let c = opts.chunk ?? 0; c < (opts.chunk ?? v.chunks.length - 1) + 1; c++) {
    const files = v.chunks[c] as OpenVersion['chunks'][number]
    const indexName = `chunk ${c} index`
    const dataName = `chunk ${c} data`
    const count = v.meta.chunkRecords[c] ?? 0
    yield { chunk: c }
    const index = new BlockReader(files.index, HEADER_SIZE + count * ENTRY, indexName, block)
    const data = new BlockReader(files.data, files.dataSize, dataName, block)
    for (let i = 0; i < count; i++) {
      opts.signal?.throwIfAborted()
      const entry = await index.view(HEADER_SIZE + i * ENTRY, ENTRY)
      if (opts.partitions && !opts.partitions.has(entry.readUInt32BE(0) % P)) continue
      const offset = Number(entry.readBigUInt64LE(8))
      const head = await data.view(offset, RECORD_HEADER_SIZE)
      const keyLen = head.readUInt32LE(0)
      const valueLen = head.readUInt32LE(4)
      const crc = head.readUInt32LE(8)
      const rec = await data.view(offset, RECORD_HEADER_SIZE + keyLen + valueLen)
      const key = rec.subarray(RECORD_HEADER_SIZE, RECORD_HEADER_SIZE + keyLen)
      const stored = rec.subarray(RECORD_HEADER_SIZE + keyLen)
      if (recordCrc(key, stored) !== crc) throw corrupt(dataName, `record at ${offset} fails its checksum`)
      const value = opts.values === false ? stored.subarray(0, 0) : codec.decode(stored)
      yield { chunk: c, key, value, prefix: entry.subarray(0, 8) }
    }
  }
}
