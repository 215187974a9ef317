import type { Compression, StoreMetadata } from '../layout/metadata'
import type { ColdReadMode, ResidencyStats } from './residency'
import type { SearchStrategy } from '../chunk/search'
import type { ValueCodec } from '../chunk/codec'
import type { FrameSink, ValueFraming } from '../chunk/value-framing'

export type { ColdReadMode, ResidencyStats } from './residency'
export type { FrameSink, ValueFraming } from '../chunk/value-framing'

/** How a reader reaches the files: memory-mapped through the addon, or pread. */
export const ACCESS_MODES = ['mmap', 'pread'] as const
export type AccessMode = (typeof ACCESS_MODES)[number]

export const PRELOADS = ['index', 'all', 'none'] as const
export type Preload = (typeof PRELOADS)[number]

/**
 * How a version stores its values: their codec, and for zstd with a trained dictionary the
 * dictionary's bytes and the checksum metadata.json names it by (xxh64, hex). A stored zstd
 * value is a frame without its magic number (docs/FORMAT.md, `.data`).
 */
export interface StoredValues {
  readonly compression: Compression
  readonly dictionary?: { readonly bytes: Buffer; readonly checksum: string }
}

/** A version's StoredValues, from its metadata and the codec its reader decodes with. */
export function storedValuesOf(metadata: StoreMetadata, codec: ValueCodec): StoredValues {
  const entry = metadata.dictionary
  if (codec.dictionary === undefined || entry === undefined) return { compression: metadata.compression }
  return { compression: metadata.compression, dictionary: { bytes: codec.dictionary, checksum: entry.checksum } }
}

/**
 * Read side of one node directory of one store version. get() and getMany() are
 * synchronous: in 'mmap' mode a lookup is one call into the addon over the mapped files
 * (no system call, no copy) and the value is a view of the mapping; in 'pread' mode it is
 * an index search over typed arrays plus one pread. A record that is not in the page cache
 * is read from the disk on the caller's thread by these two: one page (the data mappings
 * are MADV_RANDOM), for one device latency. getAsync() and getManyAsync() never wait on
 * the disk on the caller's thread: a cold record is read on the libuv pool first (several
 * at once for a batch), and hot records are answered as fast as get(). See
 * docs/SERVING.md, "Stores larger than memory".
 *
 * Values in 'mmap' mode are views of the mapped data file: treat them as read-only.
 * (Writing into one does not crash the process, the mapping is private, but it changes
 * what this process reads for that record, and the record's CRC check then reports it
 * as RO_CORRUPT.) They stay valid after close(), after a swap retired the version and
 * after its files were deleted: the mapping lives as long as any view of it.
 */
export interface StoreReader {
  readonly dir: string
  readonly metadata: StoreMetadata
  /** 'mmap' (addon) or 'pread' (fallback). */
  readonly accessMode: AccessMode
  /** The value's bytes (decompressed), or undefined when the key is absent. */
  get(key: Uint8Array | string): Buffer | undefined
  /**
   * The values of `keys`, in request order. The keys are looked up in index order (by
   * chunk and hash), so a batch walks each file forward.
   */
  getMany(keys: readonly (Uint8Array | string)[]): (Buffer | undefined)[]
  /**
   * The value as the version stores it, not decompressed (see storedValues()), or undefined
   * when the key is absent: for a caller that sends values on and lets its own client
   * decompress them. The record's CRC is checked as by get().
   */
  getStored(key: Uint8Array | string): Buffer | undefined
  /** getMany() of stored values (getStored). */
  getManyStored(keys: readonly (Uint8Array | string)[]): (Buffer | undefined)[]
  /** How getStored's values are compressed, with what the decompression needs. */
  storedValues(): StoredValues
  /** get() that reads a cold record on the libuv pool instead of the caller's thread. */
  getAsync(key: Uint8Array | string): Promise<Buffer | undefined>
  /** getMany() whose cold records are read on the libuv pool, all at once, first. */
  getManyAsync(keys: readonly (Uint8Array | string)[]): Promise<(Buffer | undefined)[]>
  /**
   * For servers that read with the synchronous methods: undefined when every record `keys`
   * name is in memory (as far as the reader's residency map knows: no system call), else a
   * Promise that resolves once the cold ones were read on the libuv pool, all at once; the
   * synchronous read that follows then does not wait on the disk. Always undefined in
   * 'pread' mode and with coldReads 'sync' (no residency map).
   */
  warm(keys: readonly (Uint8Array | string)[]): Promise<void> | undefined
  /** The residency map's counters ('mmap' mode with coldReads 'pool'), else undefined. */
  residency(): ResidencyStats | undefined
  /**
   * Drops the reader's references to its files. In 'pread' mode the descriptors are
   * closed; in 'mmap' mode the mappings are released once no value view is reachable.
   */
  close(): void
}

/**
 * The reader a serving node uses: a StoreReader plus the batch paths that write answers,
 * framed, straight into a wire buffer (RESP replies, multi-get bodies), and the probe
 * count the lookup benchmark reports. Internal: the public entry exports StoreReader.
 */
export interface ServingReader extends StoreReader {
  /**
   * The batch path for wire encoders: looks `keys` up and writes every answer, framed, into
   * one Buffer (see ValueFraming), with no Buffer per value. Same errors as getMany. With
   * `maxBytes`, answers undefined, allocating nothing, when the framed answers would be
   * larger (the caller then takes a path that bounds its memory).
   */
  getManyFramed(keys: readonly (Uint8Array | string)[], framing: ValueFraming): Buffer
  getManyFramed(keys: readonly (Uint8Array | string)[], framing: ValueFraming, maxBytes: number): Buffer | undefined
  /**
   * getManyFramed written into `sink` at its position (a connection's reply buffer)
   * instead of a Buffer of its own: no allocation and no second copy per batch. Returns
   * the bytes written, or -1, writing nothing, when they would be more than `maxBytes`.
   * With `ifResident`, FRAMED_COLD (nothing written) when a record is cold: warm(keys) it.
   */
  getManyFramedInto(
    keys: readonly (Uint8Array | string)[],
    framing: ValueFraming,
    sink: FrameSink,
    maxBytes?: number,
    ifResident?: boolean,
  ): number
  /**
   * get() with the answer framed into `sink` (the framing's prefix, then the value's frame
   * or the absent marker): a GET reply written straight from the mapping into a
   * connection's output, with no Buffer for the value. Whether the key was found. With
   * `ifResident`, undefined (nothing written) when the record is cold: warm([key]) it.
   */
  getFramedInto(key: Uint8Array | string, framing: ValueFraming, sink: FrameSink): boolean
  getFramedInto(key: Uint8Array | string, framing: ValueFraming, sink: FrameSink, ifResident: true): boolean | undefined
  /** Index entries compared by the last get() (the lookup benchmark's probes per lookup). */
  readonly lastProbes: number
}

/** getManyFramedInto with `ifResident`: a record of the batch is not in memory; nothing was written. */
export const FRAMED_COLD = -2

export interface OpenOptions {
  /** Index search; default 'interpolation'. */
  readonly search?: SearchStrategy
  /** Check every index file against its metadata checksum while opening it; default true. */
  readonly verifyIndex?: boolean
  /**
   * Check every record read against its CRC-32; default true. Off, a lookup skips one CRC
   * of the key and value: a record damaged on disk after install can then be served.
   */
  readonly verifyRecords?: boolean
  /**
   * 'mmap' maps the files through the native addon (an RO_BAD_OPTION error without it);
   * 'pread' keeps the index in typed arrays and reads records with pread; default 'auto':
   * 'mmap' when the addon is available (and ROSTORE_NATIVE is not 0), otherwise 'pread'.
   */
  readonly access?: AccessMode | 'auto'
  /**
   * What is made resident before the reader is handed out (off the event loop): 'index'
   * (default) the index files, which opening reads anyway to check them; 'all' the data
   * files too (madvise WILLNEED and one read per page; in 'pread' mode the files are read
   * through once); 'none' nothing more than the checks need, and with verifyIndex false
   * not even the index: opening then costs O(chunks), not O(records), and lookups still
   * check every offset they follow.
   */
  readonly preload?: Preload
  /**
   * 'mmap' mode, records not in memory: 'pool' (default) maps the data files MADV_RANDOM
   * (a cold record costs its own pages, no read-ahead) and keeps a residency map, so that
   * getAsync, getManyAsync and warm() read cold records off the event loop (warm-ups through
   * the addon's io_uring where the kernel allows one, else on the libuv pool: cold-io.ts,
   * ROSTORE_COLD_IO); the index files
   * are locked in memory (mlock) where the system allows it and preload is not 'none'.
   * 'sync': the kernel's default read-ahead and no map (every read on the caller's thread).
   */
  readonly coldReads?: ColdReadMode
  /** How often the residency map is refreshed from the kernel (mincore), in ms; default 1000, 0 never. */
  readonly residencyRefreshMs?: number
}

/**
 * OpenOptions plus what only the test kit sets: `mapWindowBytes`, the largest ArrayBuffer
 * one mapping is exposed through ('mmap' mode; a power of two >= 64 KiB; default 1 GiB,
 * below buffer.constants.MAX_LENGTH on every supported Node), so small files can take the
 * several-windows path that only files over 1 GiB take in production.
 */
export interface ReaderOptions extends OpenOptions {
  readonly mapWindowBytes?: number
}
