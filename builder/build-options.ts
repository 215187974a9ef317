import { cpus } from 'node:os'
import { DEFAULT_ZSTD_LEVEL, MAX_ZSTD_LEVEL, MIN_ZSTD_LEVEL } from '../formats/store/chunk/zstd-codec'
import { tmpdir } from 'node:os'
import { StoreError } from '../common/errors'
import type { InputFormat } from '../formats/input/types'
import { INPUT_FORMATS } from '../formats/input/types'
import { isSafeName } from '../formats/store/layout/layout'
import { COMPRESSIONS, type Compression } from '../formats/store/layout/metadata'
import type { Cluster } from '../cluster/cluster'

/** Memory budget per worker thread the default worker count allows for. */
const MB_PER_DEFAULT_WORKER = 64

export const DUPLICATE_POLICIES = ['error', 'first', 'last'] as const
export type DuplicatePolicy = (typeof DUPLICATE_POLICIES)[number]

/**
 * What a build writes: `nodes` (format 1) a directory per node holding its replicas'
 * chunks; `partitions` (format 2) each partition's chunks once, flat, with the version
 * manifest as the root's metadata.json (docs/FORMAT.md).
 */
export const OUTPUT_LAYOUTS = ['nodes', 'partitions'] as const
export type OutputLayout = (typeof OUTPUT_LAYOUTS)[number]

/** Options of one build; normalized once by `normalizeBuildOptions`. */
export interface BuildOptions {
  /** Files or directories (a directory means every file in it), or s3:// objects and prefixes. */
  readonly inputs: readonly string[]
  /** Every input directory or prefix must hold `_SUCCESS` (its writer finished); default false. */
  readonly requireSuccess?: boolean
  readonly format: InputFormat
  readonly cluster: Cluster
  readonly store: string
  /**
   * Output root; receives node-<id>/ for every node (layout `nodes`), or the partition files
   * and the version manifest (layout `partitions`). Must not exist yet. An s3:// prefix
   * uploads the build there.
   */
  readonly output: string
  /** Default 'nodes' (format 1); 'partitions' writes format 2. */
  readonly layout?: OutputLayout
  /** Distinct nodes holding each key; default 1. */
  readonly replication?: number
  readonly keyField?: string
  readonly valueField?: string
  /**
   * Chunks per node (layout `nodes`; default about 256 MiB of the node's share per chunk,
   * at least 2) or per partition (layout `partitions`; default about 256 MiB per chunk, at least 1).
   */
  readonly chunks?: number
  /** Default 'none'. */
  readonly compression?: Compression
  /** zstd: compression level, -7..22; default 3. */
  readonly zstdLevel?: number
  /** zstd: train a dictionary from a sample of the values (builder/dictionary-training.ts); default true. */
  readonly dictionary?: boolean
  /**
   * zstd: compress with this dictionary file (libzstd's format: a version's zstd.dict, a
   * dump's .zstd.dict) instead of one trained from the input or, with `base`, the base's.
   */
  readonly zstdDictionary?: string
  /** Positive integer; default: the current Unix time in seconds. */
  readonly version?: number
  /**
   * Default: the number of cores, but at most one per 64 MiB of --memory-mb: every worker
   * thread costs ~40 MB of its own before it buffers anything.
   */
  readonly workers?: number
  /** Memory budget of the whole build in MiB; default 1024. */
  readonly memoryMb?: number
  /** Where sorted runs spill; default the OS temp dir. */
  readonly tmpdir?: string
  /** Default 'error'. */
  readonly onDuplicate?: DuplicatePolicy
  /**
   * An earlier format-2 build output of the store (a local directory, or an s3:// prefix,
   * downloaded under `tmpdir` first: builder/s3-base.ts): the build also writes one patch
   * per partition against it (docs/FORMAT.md "Partition patches"), and takes its chunk
   * count unless `chunks` is given. Local engine only.
   */
  readonly base?: string
  /**
   * With `base`: the full files of partitions that got a patch are not kept, only the
   * patches and the manifest (a node without the base then cannot take the version).
   * Default false.
   */
  readonly patchOnly?: boolean
  /** Key hash name; only tests set it (see formats/store/layout/key-hash.ts). */
  readonly keyHash?: string
  readonly signal?: AbortSignal
  /** Called about every 200 ms with the records and bytes read so far. */
  readonly onProgress?: (p: BuildProgress) => void
}

export interface BuildProgress {
  readonly phase: 'map' | 'reduce'
  readonly records: number
  readonly bytesRead: number
  readonly bytesTotal: number
  readonly bucketsDone: number
  readonly bucketsTotal: number
}

export type NormalizedBuildOptions = Required<
  Omit<BuildOptions, 'keyField' | 'valueField' | 'chunks' | 'signal' | 'onProgress' | 'base' | 'patchOnly' | 'zstdDictionary'>
> &
  Pick<BuildOptions, 'keyField' | 'valueField' | 'chunks' | 'signal' | 'onProgress' | 'base' | 'patchOnly' | 'zstdDictionary'>

export function normalizeBuildOptions(o: BuildOptions): NormalizedBuildOptions {
  const bad = (msg: string): never => {
    throw new StoreError('RO_BAD_OPTION', msg)
  }
  if (o.inputs.length === 0) bad('no --input given')
  if (!(INPUT_FORMATS as readonly string[]).includes(o.format)) bad(`unknown --format ${o.format} (${INPUT_FORMATS.join(', ')})`)
  if (!isSafeName(o.store)) bad(`bad store name ${JSON.stringify(o.store)}: letters, digits, . _ - only, at most 128`)
  // A build is for the layout of the file: nodes listed without partitions (addresses
  // only, docs/SERVING.md "Changing the cluster") get no files.
  const cluster = { ...o.cluster, nodes: o.cluster.nodes.filter((n) => n.partitions.length > 0) }
  const replication = o.replication ?? 1
  if (!Number.isInteger(replication) || replication < 1 || replication > cluster.nodes.length) {
    bad(`--replication ${replication} must be between 1 and the cluster's ${cluster.nodes.length} nodes`)
  }
  if (o.chunks !== undefined && (!Number.isInteger(o.chunks) || o.chunks < 1 || o.chunks > 65536))
    bad(`--chunks ${o.chunks} must be 1..65536`)
  const layout = o.layout ?? 'partitions'
  if (!(OUTPUT_LAYOUTS as readonly string[]).includes(layout)) bad(`unknown --layout ${layout} (${OUTPUT_LAYOUTS.join(', ')})`)
  if (o.base !== undefined && layout !== 'partitions') bad('--base needs --layout partitions')
  if (o.patchOnly === true && o.base === undefined) bad('--patch-only needs --base')
  const compression = o.compression ?? 'none'
  if (!(COMPRESSIONS as readonly string[]).includes(compression)) bad(`unknown --compression ${compression} (${COMPRESSIONS.join(', ')})`)
  const zstdLevel = o.zstdLevel ?? DEFAULT_ZSTD_LEVEL
  if (!Number.isInteger(zstdLevel) || zstdLevel < MIN_ZSTD_LEVEL || zstdLevel > MAX_ZSTD_LEVEL)
    bad(`--zstd-level ${zstdLevel} must be ${MIN_ZSTD_LEVEL}..${MAX_ZSTD_LEVEL}`)
  if (compression !== 'zstd' && (o.zstdLevel !== undefined || o.dictionary !== undefined || o.zstdDictionary !== undefined))
    bad('--zstd-level, --zstd-dictionary and --no-dictionary go with --compression zstd')
  if (o.zstdDictionary !== undefined && o.dictionary === false) bad('give --zstd-dictionary or --no-dictionary, not both')
  const version = o.version ?? Math.floor(Date.now() / 1000)
  if (!Number.isSafeInteger(version) || version < 1) bad(`--version ${version} must be a positive integer`)
  const memoryMb = o.memoryMb ?? 1024
  const workers = o.workers ?? Math.max(1, Math.min(cpus().length, Math.floor(memoryMb / MB_PER_DEFAULT_WORKER)))
  if (!Number.isInteger(workers) || workers < 1 || workers > 256) bad(`--workers ${workers} must be 1..256`)
  if (!(memoryMb >= 1)) bad(`--memory-mb ${memoryMb} must be at least 1`)
  const onDuplicate = o.onDuplicate ?? 'error'
  if (!(DUPLICATE_POLICIES as readonly string[]).includes(onDuplicate))
    bad(`--on-duplicate must be one of ${DUPLICATE_POLICIES.join(', ')}`)
  return {
    ...o,
    cluster,
    layout,
    replication,
    compression,
    zstdLevel,
    dictionary: o.dictionary ?? true,
    version,
    workers,
    memoryMb,
    tmpdir: o.tmpdir ?? tmpdir(),
    onDuplicate,
    keyHash: o.keyHash ?? 'md5',
    requireSuccess: o.requireSuccess ?? false,
  }
}
