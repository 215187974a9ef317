import { readFile, writeFile, open, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../../common/errors'
import { xxh64Hex } from './checksum'
import { createCodec, type ValueCodec } from './codec'
import type { Compression, FileEntry } from '../layout/metadata'
import { loadZstdJs } from './zstd-js'
import { nativeFunctions } from '../../../common/native'

/**
 * A version's zstd dictionary: one file, `zstd.dict`, in libzstd's dictionary format as
 * ZDICT_trainFromBuffer writes it (its own magic 0xEC30A437 and dictionary id), beside the
 * version's metadata.json and named there with its size and checksum like a chunk file.
 * Every node directory of the version holds a copy (docs/FORMAT.md).
 */
export const DICTIONARY_FILE = 'zstd.dict'
/** Largest dictionary a reader loads (the build trains 64 KiB ones). */
export const MAX_DICTIONARY_BYTES = 1 << 20

/** The metadata fields a version's codec depends on. */
export interface CodecFields {
  readonly compression: Compression
  readonly dictionary?: FileEntry
}

/** Writes the dictionary durably into `dir`; its entry for the metadata. */
export async function writeDictionary(dir: string, bytes: Uint8Array): Promise<FileEntry> {
  const file = join(dir, DICTIONARY_FILE)
  await writeFile(file, bytes)
  const fh = await open(file, 'r+')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
  return { name: DICTIONARY_FILE, size: bytes.length, checksum: await xxh64Hex(bytes) }
}

/** The dictionary `entry` names in `dir`, its size and checksum checked (RO_CHECKSUM_MISMATCH). */
export async function readDictionary(dir: string, entry: FileEntry): Promise<Buffer> {
  const file = join(dir, entry.name)
  const mismatch = (): StoreError =>
    new StoreError('RO_CHECKSUM_MISMATCH', `${file}: the zstd dictionary does not match its size and checksum in the metadata`)
  let bytes: Buffer
  try {
    // Its size first: a file replaced by a large one is not read into memory.
    if ((await stat(file)).size !== entry.size) throw mismatch()
    bytes = await readFile(file)
  } catch (err) {
    if (err instanceof StoreError) throw err
    throw new StoreError('RO_IO', `${file}: cannot read the version's zstd dictionary`, { cause: err })
  }
  if (bytes.length !== entry.size || (await xxh64Hex(bytes)) !== entry.checksum) throw mismatch()
  return bytes
}

/** The codec that reads the values of the version in `dir` (its dictionary loaded, checked and prepared once). */
export async function versionCodec(dir: string, meta: CodecFields): Promise<ValueCodec> {
  if (meta.compression !== 'zstd') return createCodec(meta.compression)
  return zstdDecoder(meta.dictionary ? await readDictionary(dir, meta.dictionary) : undefined)
}

/** A zstd codec that decodes with `dictionary` (or none): through the addon, else the JavaScript decoder. */
export async function zstdDecoder(dictionary: Uint8Array | undefined): Promise<ValueCodec> {
  // Without the addon, a dictionary's frames need the JavaScript build of libzstd, which starts asynchronously.
  const js = dictionary !== undefined && nativeFunctions() === undefined ? await loadZstdJs() : undefined
  return createCodec('zstd', { dictionary, ...(js ? { js } : {}) })
}

/** Checks a metadata's "dictionary" field: only with zstd, named zstd.dict, bounded. */
export function checkDictionaryField(m: Record<string, unknown>, bad: (msg: string) => never): void {
  const d = m['dictionary']
  if (d === undefined) return
  if (m['compression'] !== 'zstd') bad('"dictionary" belongs to zstd compression only')
  const e = d as Record<string, unknown>
  if (typeof d !== 'object' || d === null || e['name'] !== DICTIONARY_FILE) bad(`"dictionary" must name ${DICTIONARY_FILE}`)
  const size = e['size']
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 8 || size > MAX_DICTIONARY_BYTES)
    bad(`"dictionary": size must be 8..${MAX_DICTIONARY_BYTES}`)
  if (typeof e['checksum'] !== 'string' || !/^[0-9a-f]{8,128}$/.test(e['checksum'])) bad('"dictionary": bad checksum')
}
