import { StoreError } from '../../../common/errors'
import { announceAccessMode, logLine, nativeUnavailableReason } from '../../../common/native'
import { versionCodec } from '../chunk/dictionary-file'
import { collideBitsOf } from '../layout/key-hash'
import { openMappedChunk, type MappedChunk } from './mapped-chunk'
import { MappedStoreReader } from './mapped-reader'
import type { StoreMetadata } from '../layout/metadata'
import { chunkGeometry } from '../layout/partition-files'
import { readMetadata } from '../layout/metadata-io'
import { readNodeOrBuild, wholeVersionView } from '../layout/manifest-io'
import { openPreadStore } from './pread-reader'
import { COLD_READ_MODES, DEFAULT_RESIDENCY_REFRESH_MS, ResidencyMap } from './residency'
import { SEARCH_STRATEGIES } from '../chunk/search'
import { slotCount } from '../layout/slots'
import { nativeStoreOps, type StoreOps } from './store-ops'
import { ACCESS_MODES, PRELOADS, type OpenOptions, type ReaderOptions, type ServingReader, type StoreReader } from './store-reader-api'

export type {
  AccessMode,
  OpenOptions,
  Preload,
  ReaderOptions,
  ServingReader,
  StoreReader,
  StoredValues,
  ValueFraming,
} from './store-reader-api'

/** Default window of a mapping exposed to JavaScript (see OpenOptions.mapWindowBytes). */
export const DEFAULT_MAP_WINDOW_BYTES = 1 << 30

/**
 * Opens a node directory, or a whole format-2 build output (every partition), for
 * lookups: the public entry's reader (get, getMany, their async forms, warm, residency).
 * Nothing O(records) runs on the calling thread: in 'mmap' mode the mapping, index checks,
 * checksum and warm-up run in the addon on the libuv pool; in 'pread' mode the index is
 * read and decoded in async blocks.
 */
export async function openStore(dir: string, opts: OpenOptions = {}): Promise<StoreReader> {
  return openServingStore(dir, opts)
}

/** openServingReader of a node directory or a format-2 build output (its whole version), as openStore opens them. */
export async function openServingStore(dir: string, opts: ReaderOptions = {}): Promise<ServingReader> {
  const found = await readNodeOrBuild(dir)
  return openServingReader(dir, opts, found.kind === 'build' ? wholeVersionView(found.manifest) : found.meta)
}

/** openStore for a serving node: the same reader, with its framed batch paths (ServingReader); node directories only. */
export async function openServingReader(dir: string, opts: ReaderOptions = {}, known?: StoreMetadata): Promise<ServingReader> {
  const o = normalize(opts)
  const metadata = known ?? (await readMetadata(dir))
  announceAccessMode()
  const ops = o.access === 'pread' ? undefined : nativeStoreOps()
  if (!ops) {
    if (o.access === 'mmap') throw new StoreError('RO_BAD_OPTION', `access 'mmap' needs the native addon: ${nativeUnavailableReason()}`)
    return openPreadStore(dir, metadata, o)
  }
  try {
    return await openMappedStore(ops, dir, metadata, o)
  } catch (err) {
    // The kernel refusing the mapping itself (address space, a strict overcommit policy)
    // is no reason not to serve: 'auto' then reads this store with pread, and says so.
    if (o.access === 'mmap' || !isMapRefusal(err)) throw err
    logLine('warn', 'store_access_fallback', { dir, mode: 'pread', reason: (err as Error).message })
    return openPreadStore(dir, metadata, o)
  }
}

function isMapRefusal(err: unknown): boolean {
  const code = (err as { cause?: { code?: unknown } })?.cause?.code
  return err instanceof StoreError && err.code === 'RO_IO' && (code === 'ENOMEM' || code === 'EFBIG' || code === 'ENODEV')
}

/** The 'mmap' reader over `ops` (the addon's functions, or in tests their JS twins). */
export async function openMappedStore(ops: StoreOps, dir: string, metadata: StoreMetadata, o: NormalizedOptions): Promise<ServingReader> {
  const codec = await versionCodec(dir, metadata)
  const collideBits = collideBitsOf(metadata.keyHash)
  const keyHash = (key: Uint8Array, out: Uint8Array): void => {
    ops.md5(key, out)
    if (collideBits >= 0) {
      out[0] = (out[0] as number) & ((1 << collideBits) - 1)
      out.fill(0, 1, 8)
    }
  }
  const residency = o.coldReads === 'pool' ? new ResidencyMap(ops, o.residencyRefreshMs) : undefined
  const geometry = chunkGeometry(metadata)
  const chunks: MappedChunk[] = []
  try {
    for (let s = 0; s < slotCount(metadata); s++) {
      chunks.push(
        await openMappedChunk(ops, dir, metadata, s, codec, { ...o, windowBytes: o.mapWindowBytes, keyHash, residency, geometry }),
      )
    }
    await residency?.start()
  } catch (err) {
    residency?.close()
    throw err
  }
  return new MappedStoreReader(dir, metadata, ops, chunks, codec, residency, {
    geometry,
    binary: o.search === 'binary',
    verifyRecords: o.verifyRecords,
    collideBits,
  })
}

export type NormalizedOptions = Required<ReaderOptions>

export function normalize(opts: ReaderOptions): NormalizedOptions {
  const o: NormalizedOptions = {
    search: opts.search ?? 'interpolation',
    verifyIndex: opts.verifyIndex ?? true,
    verifyRecords: opts.verifyRecords ?? true,
    access: opts.access ?? 'auto',
    preload: opts.preload ?? 'index',
    mapWindowBytes: opts.mapWindowBytes ?? DEFAULT_MAP_WINDOW_BYTES,
    coldReads: opts.coldReads ?? 'pool',
    residencyRefreshMs: opts.residencyRefreshMs ?? DEFAULT_RESIDENCY_REFRESH_MS,
  }
  if (!COLD_READ_MODES.includes(o.coldReads)) throw new RangeError(`unknown coldReads ${String(o.coldReads)}`)
  if (!Number.isSafeInteger(o.residencyRefreshMs) || o.residencyRefreshMs < 0) {
    throw new RangeError(`residencyRefreshMs must be a whole number of ms >= 0, got ${o.residencyRefreshMs}`)
  }
  if (!SEARCH_STRATEGIES.includes(o.search)) throw new RangeError(`unknown search ${String(o.search)}`)
  if (o.access !== 'auto' && !ACCESS_MODES.includes(o.access)) throw new RangeError(`unknown access mode ${String(o.access)}`)
  if (!PRELOADS.includes(o.preload)) throw new RangeError(`unknown preload ${String(o.preload)}`)
  const w = o.mapWindowBytes
  if (!Number.isSafeInteger(w) || w < 65536 || !Number.isInteger(Math.log2(w))) {
    throw new RangeError(`mapWindowBytes must be a power of two >= 65536, got ${w}`)
  }
  return o
}
