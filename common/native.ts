import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { StoreError } from './errors'

/**
 * The loader of rostore's native addon (native/, built by node-gyp at install). It tries
 * the addon once, exposes its functions with types, turns its error codes into
 * StoreError, and says once in the log which access mode readers use. Callers never
 * `require` the .node file themselves. `ROSTORE_NATIVE=0` in the environment forces the
 * pure-JavaScript path everywhere (for CI, and for machines where the addon misbehaves).
 *
 * Every function here has a JavaScript twin with the same signature (common/md5.ts,
 * common/crc32.ts, and the test kit's testkit/js-twins/); one
 * describe.each suite runs both (test/unit/formats/store/store-ops.test.ts).
 */

/** A whole file, mapped: consecutive windows of at most the requested size. */
export interface MappedFile {
  readonly size: number
  /** SharedArrayBuffers over the mapping (the addon; V8 does not count them as external
   *  memory) or ArrayBuffers (the JavaScript path), in file order; empty for an empty file. */
  readonly windows: readonly ArrayBufferLike[]
}

/** Result of scanning one index file (see native/lookup/index-scan.h). */
export interface IndexScan {
  /** SCAN_OK, SCAN_ORDER (entry out of hash order) or SCAN_OFFSET (bad data offset). */
  readonly status: number
  /** The offending entry when status is not SCAN_OK. */
  readonly entry: number
  /** Lower-case hex XXH64 of the whole file, or '' when not asked for. */
  readonly checksum: string
}

export const SCAN_OK = 0
export const SCAN_ORDER = 1
export const SCAN_OFFSET = 2

export interface LookupChunkSpec {
  /** The index file's windows (header included). */
  readonly index: readonly ArrayBufferLike[]
  /** Entries in the index. */
  readonly count: number
  /** The data file's windows. */
  readonly data: readonly ArrayBufferLike[]
  readonly dataSize: number
  /** Bucket starts of the top `radixBits` bits (2^bits + 1 entries), or null. */
  readonly radix: Uint32Array | null
  readonly radixBits: number
  /** One byte per page of the data file, bit 0 set where the page is resident (see
   *  formats/store/read/residency.ts); null: every page is taken as resident. */
  readonly resident: Uint8Array | null
  /** CRC-32 of each 4096 bytes of the index file, taken at open (scanIndex's blockCrcs), or
   *  null: a lookup that finds no entry then trusts the index as it reads it. */
  readonly indexCrcs: Uint32Array | null
}

export interface LookupSpec {
  readonly chunks: readonly LookupChunkSpec[]
  /** Scratch the caller writes each key into before get(keyLength). */
  readonly key: Uint8Array
  /** Receives [chunk, valueOffset, valueLength, probes, recordOffset] after each get. */
  readonly out: Float64Array
  readonly binary: boolean
  readonly checkCrc: boolean
  /** -1 for MD5; N for the test hash md5-collide-N. */
  readonly collideBits: number
  /**
   * Format 2 (partition files): chunk slot = slots[u32be(h[0..4]) mod count] × chunks +
   * u32be(h[4..8]) mod chunks, and a key whose slot is -1 (partition not held) is a miss.
   * Absent: format 1, chunk = u32be(h[4..8]) mod chunks.length.
   */
  readonly partitions?: LookupPartitions
}

export interface LookupPartitions {
  /** P, the length of `slots`. */
  readonly count: number
  /** Slot of each partition among the held ones, -1 when not held. */
  readonly slots: Int32Array
  /** Chunks per partition: chunks.length = held partitions × chunks. */
  readonly chunks: number
}

/**
 * The lookups take an optional last argument `cold`: true answers LOOKUP_COLD, reading
 * nothing of the record, when a page of it is not marked in its chunk's `resident` vector
 * (out: chunk, record offset, and the record's bytes when its header was read, else 0).
 * False or absent, a record on a page that is not in memory is read, faulting it in.
 */
export interface LookupFunctions {
  /** Looks up the key in spec.key[0..keyLength): a LOOKUP_* status; details in spec.out. */
  get(keyLength: number, cold?: boolean): number
  /**
   * Key i is keys[ends[i-1] .. ends[i]). Looks the keys up in index order and writes
   * out[4i..4i+3] = status, chunk, valueOffset (the damaged record's offset when
   * status < 0), valueLength, in request order.
   */
  getMany(keys: Uint8Array, ends: Uint32Array, count: number, out: Float64Array, cold?: boolean): void
  /**
   * Writes the framed answers of a getMany (its `out`) into `out` from `at`, each value
   * copied from the mapped data file: per key `absent`, or a length header (`resp`:
   * `$<decimal>\r\n`, else u32 big-endian), the value and `suffix`. Returns the offset
   * after the last byte; throws a TypeError when `out` is too small.
   */
  frame(results: Float64Array, count: number, out: Uint8Array, at: number, resp: boolean, absent: Uint8Array, suffix: Uint8Array): number
  /**
   * get() of the key in spec.key[0..keyLength), its answer framed at out[at] as frame()
   * frames one: a LOOKUP_* status, spec.out as get() leaves it and spec.out[5] = the offset
   * after the answer; LOOKUP_NEEDS_ROOM (nothing written) when `out` is too small from `at`.
   */
  getFramed(keyLength: number, out: Uint8Array, at: number, resp: boolean, absent: Uint8Array, suffix: Uint8Array, cold?: boolean): number
  /** Drops the references to the mapped windows; get and getMany throw afterwards. */
  close(): void
}

export const LOOKUP_MISS = 0
export const LOOKUP_HIT = 1
/** getFramed: the answer does not fit in `out` from `at`. */
export const LOOKUP_NEEDS_ROOM = 3
/** With `cold`: the record is not known to be in memory, and nothing of it was read. */
export const LOOKUP_COLD = 4

/** An opaque handle of the addon: a prepared ZSTD dictionary and its contexts. */
export interface ZstdPrepared {
  readonly __zstdPrepared: never
}

/** The addon's functions, as the loader exposes them (errors already StoreErrors). */
export interface NativeFunctions {
  md5(src: Uint8Array, out: Uint8Array): void
  crc32(src: Uint8Array, initial: number): number
  /** MD5 of each range [starts[i], ends[i]) of `src` into out[16i, 16i + 16) (the builder's batches). */
  md5Batch(src: Uint8Array, starts: Uint32Array, ends: Uint32Array, count: number, out: Uint8Array): void
  /** zlib's CRC-32 of each range [starts[i], ends[i]) of `src` into out[i]. */
  crc32Batch(src: Uint8Array, starts: Uint32Array, ends: Uint32Array, count: number, out: Uint32Array): void
  /**
   * SortBuffer.addRaw for entries [from, to) of a batch (builder/sort-buffer.ts, whose
   * addEntriesJs is the twin); state is [arena bytes used, records], updated in place.
   * Returns the first entry that did not fit.
   */
  packMapped(
    arena: Uint8Array,
    state: Float64Array,
    positions: Uint32Array,
    buckets: Uint32Array,
    his: Uint32Array,
    los: Uint32Array,
    hashes: Uint8Array,
    src: Uint8Array,
    keyStart: Uint32Array,
    keyEnd: Uint32Array,
    valueStart: Uint32Array,
    valueEnd: Uint32Array,
    order: Float64Array,
    line: Float64Array,
    fileIndex: number,
    entryRecord: Uint32Array,
    entryBucket: Uint32Array,
    from: number,
    to: number,
  ): number
  /** Drops the file's unmapped pages from the page cache (benchmarks of cold stores); false when not possible. */
  dropCache(path: string): boolean
  mapFile(path: string, privateWritable: boolean, windowBytes: number): Promise<MappedFile>
  /** Starts one incremental garbage collection, so mappings no view reaches any more are
   *  unmapped soon (V8 does not count them as memory, so it would not hurry on its own). */
  releaseMappings(): void
  scanIndex(
    windows: readonly ArrayBufferLike[],
    entries: number,
    dataSize: number,
    radix: Uint32Array | null,
    radixBits: number,
    checksum: boolean,
    willNeed: boolean,
    /** Receives the CRC-32 of each 4096 bytes of the index file (a lookup's miss check). */
    blockCrcs?: Uint32Array | null,
  ): Promise<IndexScan>
  /** madvise(WILLNEED) and one read per page, off the JS thread; resolves to the bytes covered. */
  prefetch(windows: readonly ArrayBufferLike[]): Promise<number>
  /** Maps the pages of `windows` the page cache holds already, off the JS thread (native/memory/mapping.h); resolves to their count. */
  mapResident(windows: readonly ArrayBufferLike[]): Promise<number>
  createLookup(spec: LookupSpec): LookupFunctions
  /** madvise(MADV_RANDOM) over a mapping: a fault reads its page and no read-ahead. 0 or errno. */
  adviseRandom(windows: readonly ArrayBufferLike[]): number
  /** mincore over a mapping into `vec` (one byte per page), off the JS thread; resolves to the resident pages. */
  refreshResidency(windows: readonly ArrayBufferLike[], vec: Uint8Array): Promise<number>
  /**
   * Brings records of data mappings into memory on the libuv pool and marks their pages:
   * `ranges` holds (file, offset, length) for `count` records of `files` ([windows, vec]
   * pairs; length 0: read from the record's header); every read is started at once, then
   * each record is mapped (MADV_POPULATE_READ). Resolves to the pages not marked before.
   */
  warmRecords(files: readonly (readonly [readonly ArrayBufferLike[], Uint8Array])[], ranges: Float64Array, count: number): Promise<number>
  /**
   * Sets up this thread's io_uring (native/io/uring-reads.c) if not yet: 0, or the errno it
   * was refused with (ENOSYS, EPERM under a system call filter or kernel.io_uring_disabled).
   */
  uringProbe(): number
  /** A data file opened for readRecords with POSIX_FADV_RANDOM (no read-ahead): its fd, or -errno. */
  openRandom(path: string): number
  /**
   * warmRecords through this thread's io_uring, completions on its event loop (no pool
   * thread): `files` are [fd, vec, size] triples; each record's pages are read (buffered)
   * into a scratch buffer, so they land in the page cache, and marked. Resolves to the
   * pages not marked before. Throws when uringProbe() is not 0.
   */
  readRecords(files: readonly (readonly [number, Uint8Array, number])[], ranges: Float64Array, count: number): Promise<number>
  /** pread(2) of buf.length bytes at `position` through this thread's io_uring: the bytes read. Throws when uringProbe() is not 0. */
  preadRing(fd: number, buf: Uint8Array, position: number): Promise<number>
  /** mlock over a mapping, off the JS thread; resolves to 0 or the errno (EPERM, ENOMEM: not allowed). */
  lockPages(windows: readonly ArrayBufferLike[]): Promise<number>
  /**
   * ZSTD frames of `src` decompressed into `dst` (sized by the caller); the bytes written,
   * or -1 when the system's libzstd is not there. Throws when the data does not fit or
   * is corrupt. Twin: formats/input/parquet/codecs.ts (fzstd).
   */
  zstdDecompress(src: Uint8Array, dst: Uint8Array): number
  /**
   * A ZSTD dictionary of at most dst.length bytes trained from `count` samples laid end to
   * end in `samples` (sample i is sizes[i] bytes), written into dst: its size, or -1 without
   * libzstd. Single-threaded training: the same samples give the same bytes. Throws
   * RO_ZSTD when libzstd cannot train (too few or too small samples).
   */
  zstdTrain(samples: Uint8Array, sizes: Uint32Array, count: number, dst: Uint8Array): number
  /**
   * A dictionary (or none) prepared once, with its own contexts, for zstdCompress (when
   * `compress`, at `level`) and zstdDecompressWith; null without libzstd. Freed when
   * collected. Not to be shared between threads.
   */
  zstdPrepare(dict: Uint8Array | null, level: number, compress: boolean): ZstdPrepared | null
  /** One frame of `src` (its content size in the header) into dst: its length. Throws when dst is too small. */
  zstdCompress(prepared: ZstdPrepared, src: Uint8Array, dst: Uint8Array): number
  /**
   * For each of `count` records of src, its key copied and its value compressed (as
   * zstdCompress) into dst back to back, their ranges in dst in the out arrays: the bytes of
   * dst used. Throws when a range is outside src or dst is too small.
   */
  zstdEncodeBatch(
    prepared: ZstdPrepared,
    src: Uint8Array,
    keyStart: Uint32Array,
    keyEnd: Uint32Array,
    valueStart: Uint32Array,
    valueEnd: Uint32Array,
    count: number,
    dst: Uint8Array,
    outKeyStart: Uint32Array,
    outKeyEnd: Uint32Array,
    outValueStart: Uint32Array,
    outValueEnd: Uint32Array,
  ): number
  /** The frame of `src` into dst: the bytes written. Throws RO_ZSTD on a corrupt frame, a wrong dictionary, or too small a dst. */
  zstdDecompressWith(prepared: ZstdPrepared, src: Uint8Array, dst: Uint8Array): number
  /** The content size a frame header declares: -1 none declared, -2 not a frame, -3 no libzstd. */
  zstdFrameSize(src: Uint8Array): number
  /**
   * A snappy block (raw format) into dst, which holds exactly its declared length: 0, or -1
   * when src is not a valid block of that length (never reads or writes outside either).
   */
  snappyDecode(src: Uint8Array, dst: Uint8Array): number
  /**
   * `bytes` of zero-filled memory in an anonymous mapping that asks for transparent huge
   * pages (far fewer page faults on first touch); unmapped when collected. Throws when the
   * mapping fails. See common/working-memory.ts.
   */
  anonBuffer(bytes: number): SharedArrayBuffer
  /**
   * One non-blocking send(2) of `bytes` on the connected socket `fd`: the bytes the kernel
   * took (possibly fewer), or -errno (-EAGAIN when it took none). No JavaScript twin: where
   * the addon is absent the caller writes through the socket (server/resp/direct-send.ts).
   */
  sendNow(fd: number, bytes: Uint8Array): number
  /**
   * Replaces `dir/name` with `bytes` crash-safely in one job on the libuv pool: creates
   * `dir/tmpName` (exclusive), writes, fsyncs and closes it, renames it over `dir/name` and
   * fsyncs `dir`. `stopAfter` 1 stops once the temp file is closed, 2 after the rename (crash
   * tests). Rejects with an Error whose `code` is the errno name and `syscall` the failed step;
   * a temp file it created and did not rename is removed. Twin: swapper/disk/live-pointer.ts.
   */
  writeFileDurably(dir: string, tmpName: string, name: string, bytes: Uint8Array, stopAfter: 0 | 1 | 2): Promise<void>
  /**
   * On the libuv pool: starts the writeback of [startOffset, +startLength) of `fd`, then waits
   * for [dropOffset, +dropLength) to be on disk and drops it from the page cache
   * (native/io/drop-behind.c). Resolves to 0 or the errno of the advice that failed (the data
   * is written either way). No JavaScript twin: without the addon written pages stay cached.
   */
  writeBehind(fd: number, startOffset: number, startLength: number, dropOffset: number, dropLength: number): Promise<number>
  /** posix_fadvise(DONTNEED) over a range of `fd` already read (length 0: to its end; whole pages only): 0 or the errno. */
  dropRange(fd: number, offset: number, length: number): number
  /** Nice value and I/O priority of the calling thread (native/io/job-priority.c): 0 or -errno. */
  lowerThreadPriority(nice: number, ioClass: number, ioLevel: number): number
}

/** Why a lookup failed (status < 0), as the reason of an RO_CORRUPT error. */
export function lookupFailure(status: number, recordOffset: number): string {
  switch (status) {
    case -1:
      return `record at offset ${recordOffset} runs past the end of the file`
    case -2:
      return `record at offset ${recordOffset} fails its checksum`
    case -3:
      return `record at offset ${recordOffset} holds a key that does not belong to its index entry`
    case -4:
      return `an index entry points outside the data file (offset ${recordOffset})`
    case -5:
      return `index entries out of hash order near the entry pointing to ${recordOffset}`
    case -6:
      return `the index block at byte ${recordOffset} no longer matches its check from open: the index was damaged since`
    default:
      return `lookup failed with status ${status}`
  }
}

interface RawAddon extends Omit<NativeFunctions, 'dropCache'> {
  dropCache(path: string): number
}

interface LoadResult {
  readonly functions: NativeFunctions | undefined
  /** Why the addon is not used, when it is not. */
  readonly reason: string
}

let loaded: LoadResult | undefined
let announced = false

/** The addon's functions, or undefined (forced off, not built, or failing to load). */
export function nativeFunctions(): NativeFunctions | undefined {
  return load().functions
}

/** Why nativeFunctions() is undefined ('' when it is not). */
export function nativeUnavailableReason(): string {
  return load().reason
}

/**
 * Writes one log line, the first time a reader is opened in this process, naming the
 * access mode readers use and why. JSON like the server's log lines, on stderr.
 */
export function announceAccessMode(write: (line: string) => void = (l) => void process.stderr.write(l)): void {
  if (announced) return
  announced = true
  const { functions, reason } = load()
  if (functions) logLine('info', 'store_access_mode', { mode: 'mmap' }, write)
  else logLine('warn', 'store_access_mode', { mode: 'pread', reason }, write)
}

/** One JSON log line on stderr, shaped like the server's (server/log.ts), which common/ cannot import. */
export function logLine(
  level: 'info' | 'warn',
  event: string,
  fields: Record<string, string>,
  write: (line: string) => void = (l) => void process.stderr.write(l),
): void {
  write(`${JSON.stringify({ ts: new Date().toISOString(), level, event, ...fields })}\n`)
}

function load(): LoadResult {
  if (loaded) return loaded
  if (process.env['ROSTORE_NATIVE'] === '0') {
    loaded = { functions: undefined, reason: 'the native addon is disabled by ROSTORE_NATIVE=0' }
    return loaded
  }
  const file = findAddon()
  if (!file) {
    loaded = { functions: undefined, reason: 'the native addon is not built (build/Release/rostore_native.node; see native/README.md)' }
    return loaded
  }
  try {
    const mod = { exports: {} }
    process.dlopen(mod, file)
    loaded = { functions: wrap(mod.exports as RawAddon), reason: '' }
  } catch (err) {
    loaded = { functions: undefined, reason: `the native addon does not load: ${(err as Error).message.split('\n')[0]}` }
  }
  return loaded
}

/** build/Release/rostore_native.node above the compiled file (dist/common, or another outDir). */
function findAddon(): string | undefined {
  let dir = __dirname
  for (let up = 0; up < 5; up++) {
    for (const kind of ['Release', 'Debug']) {
      const file = join(dir, 'build', kind, 'rostore_native.node')
      if (existsSync(file)) return file
    }
    const parent = dirname(dir)
    if (parent === dir) break
    dir = parent
  }
  return undefined
}

function wrap(raw: RawAddon): NativeFunctions {
  return {
    md5: raw.md5,
    crc32: raw.crc32,
    md5Batch: raw.md5Batch,
    crc32Batch: raw.crc32Batch,
    packMapped: raw.packMapped,
    dropCache: (path) => raw.dropCache(path) === 0,
    mapFile: async (path, privateWritable, windowBytes) => {
      try {
        return await raw.mapFile(path, privateWritable, windowBytes)
      } catch (err) {
        const code = (err as { code?: string }).code
        const verb = code === 'ENOMEM' || code === 'EFBIG' ? 'cannot map' : 'cannot open'
        throw new StoreError('RO_IO', `${path}: ${verb}: ${(err as Error).message} (${code ?? 'unknown'})`, { cause: err })
      }
    },
    releaseMappings: raw.releaseMappings,
    scanIndex: raw.scanIndex,
    prefetch: raw.prefetch,
    mapResident: raw.mapResident,
    createLookup: raw.createLookup,
    adviseRandom: raw.adviseRandom,
    refreshResidency: raw.refreshResidency,
    warmRecords: raw.warmRecords,
    lockPages: raw.lockPages,
    uringProbe: raw.uringProbe,
    openRandom: raw.openRandom,
    readRecords: raw.readRecords,
    preadRing: raw.preadRing,
    zstdDecompress: raw.zstdDecompress,
    zstdTrain: raw.zstdTrain,
    zstdPrepare: raw.zstdPrepare,
    zstdCompress: raw.zstdCompress,
    zstdEncodeBatch: raw.zstdEncodeBatch,
    zstdDecompressWith: raw.zstdDecompressWith,
    zstdFrameSize: raw.zstdFrameSize,
    snappyDecode: raw.snappyDecode,
    anonBuffer: raw.anonBuffer,
    sendNow: raw.sendNow,
    writeFileDurably: raw.writeFileDurably,
    writeBehind: raw.writeBehind,
    dropRange: raw.dropRange,
    lowerThreadPriority: raw.lowerThreadPriority,
  }
}
