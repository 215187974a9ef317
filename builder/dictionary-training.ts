import { readFile } from 'node:fs/promises'
import { StoreError } from '../common/errors'
import { readRecordBatches } from '../formats/input/record-batch'
import { MAX_DICTIONARY_BYTES, readDictionary } from '../formats/store/chunk/dictionary-file'
import type { FileEntry } from '../formats/store/layout/metadata'
import type { NormalizedBuildOptions } from './build-options'
import type { InputFormat } from '../formats/input/types'
import { trainZstdDictionary } from '../formats/store/chunk/zstd-codec'

/**
 * The zstd dictionary of a build: one per store version, trained before the map step from
 * the values at the start of the input files. One per version because every value is
 * compressed in the map step, before the reduce that writes partitions, and because a
 * node then holds one prepared dictionary whatever partitions it serves; per-partition
 * dictionaries would also train on 1/P of the sample each.
 *
 * The sample is a pure function of the input (the first values of up to 64 files spread
 * evenly over the sorted file list), so any engine that reads the same input trains the
 * same bytes with the same libzstd.
 */
export const DICTIONARY_CAPACITY = 64 << 10
/**
 * 32 times the dictionary. On recommendation-like values (bench 2c's generator) a 64 KiB
 * dictionary from 4 MiB compressed as well as zstd's default 110 KiB from 11 MiB, and a
 * smaller dictionary stays in cache while values are compressed and read. From 2 MiB its
 * frames are 0.4% larger than from 4 MiB and it trains in half the time (0.11 s against
 * 0.21 s): training runs before the map step, with one core busy, so on a 1M-record build
 * it was a tenth of the build's time.
 */
const SAMPLE_BYTES = 32 * DICTIONARY_CAPACITY
const MAX_SAMPLE_FILES = 64
/** A longer value adds nothing a dictionary can use beyond its first bytes. */
const MAX_SAMPLE_VALUE = 16 << 10

export interface SampleOptions {
  readonly keyField?: string
  readonly valueField?: string
  readonly signal?: AbortSignal
}

/** The values the dictionary is trained on, in a fixed order. */
export async function sampleValues(files: readonly string[], format: InputFormat, o: SampleOptions): Promise<Buffer[]> {
  const picked = spread(files, MAX_SAMPLE_FILES)
  const perFile = Math.ceil(SAMPLE_BYTES / Math.max(1, picked.length))
  const samples: Buffer[] = []
  for (const file of picked) {
    let taken = 0
    const batches = readRecordBatches(file, format, { keyField: o.keyField, valueField: o.valueField, signal: o.signal })
    try {
      for await (const b of batches) {
        for (let i = 0; i < b.count && taken < perFile; i++) {
          const start = b.valueStart[i] as number
          const end = Math.min(b.valueEnd[i] as number, start + MAX_SAMPLE_VALUE)
          samples.push(Buffer.from(b.buf.subarray(start, end)))
          taken += end - start
        }
        if (taken >= perFile) break
      }
    } finally {
      await batches.return(undefined)
    }
  }
  return samples
}

/**
 * The dictionary a zstd build compresses with, or undefined for plain zstd: the file given
 * (--zstd-dictionary); else, with --base, the base's, so that a value that did not change
 * compresses to the same bytes and the partition patches carry only what changed (a new
 * dictionary would change every stored value, and the nodes could not rebuild the version
 * from their base: patch-apply.ts); else one trained from the input. A full build (no
 * --base) trains afresh, so a store's dictionary follows its data at that rate.
 */
export async function buildDictionary(
  o: Pick<NormalizedBuildOptions, 'compression' | 'dictionary' | 'zstdDictionary' | 'format' | 'keyField' | 'valueField' | 'signal'>,
  files: readonly string[],
  base?: { readonly dir: string; readonly manifest: { readonly dictionary?: FileEntry } },
): Promise<BuildDictionary | undefined> {
  if (o.compression !== 'zstd' || !o.dictionary) return undefined
  if (o.zstdDictionary !== undefined) return { bytes: await readGivenDictionary(o.zstdDictionary), source: 'given' }
  if (base?.manifest.dictionary !== undefined) return { bytes: await readDictionary(base.dir, base.manifest.dictionary), source: 'base' }
  const trained = await trainBuildDictionary(files, o.format, { keyField: o.keyField, valueField: o.valueField, signal: o.signal })
  return trained === undefined ? undefined : { bytes: trained, source: 'trained' }
}

/** Where a build's dictionary came from: metadata.json's build.zstdDictionary says it. */
export const DICTIONARY_SOURCES = ['trained', 'given', 'base'] as const
export type DictionarySource = (typeof DICTIONARY_SOURCES)[number]

export interface BuildDictionary {
  readonly bytes: Buffer
  readonly source: DictionarySource
}

/** ZDICT_trainFromBuffer's output starts with this magic (0xEC30A437, little-endian). */
const DICTIONARY_MAGIC = Buffer.from([0x37, 0xa4, 0x30, 0xec])

/** A dictionary file given to the build: libzstd's format, bounded (RO_BAD_OPTION naming the file otherwise). */
export async function readGivenDictionary(path: string): Promise<Buffer> {
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (err) {
    throw new StoreError('RO_BAD_OPTION', `--zstd-dictionary ${path}: ${(err as Error).message}`, { cause: err })
  }
  if (bytes.length < 8 || bytes.length > MAX_DICTIONARY_BYTES || !bytes.subarray(0, 4).equals(DICTIONARY_MAGIC))
    throw new StoreError(
      'RO_BAD_OPTION',
      `--zstd-dictionary ${path}: not a zstd dictionary of at most ${MAX_DICTIONARY_BYTES} bytes (libzstd's format, magic 37 A4 30 EC)`,
    )
  return bytes
}

/** The build's dictionary, or undefined when the input is too small to train one. */
export async function trainBuildDictionary(files: readonly string[], format: InputFormat, o: SampleOptions): Promise<Buffer | undefined> {
  return trainZstdDictionary(await sampleValues(files, format, o), DICTIONARY_CAPACITY)
}

function spread<T>(xs: readonly T[], most: number): T[] {
  if (xs.length <= most) return [...xs]
  return Array.from({ length: most }, (_, i) => xs[Math.floor((i * xs.length) / most)] as T)
}
