import { open, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../../common/errors'
import { isKnownKeyHash } from './key-hash'
import { isChunkFileName } from './layout'
import { FORMAT_MAJOR, METADATA_FILE, type StoreMetadata } from './metadata'
import { checkStoreFields, int } from './metadata-fields'
import { checkNodeView } from './node-view-check'
import { PARTITIONED_FORMAT_MAJOR } from './partition-files'

/** Metadata files are small; anything bigger is not ours. */
export const MAX_METADATA_BYTES = 16 << 20

export async function readMetadata(dir: string): Promise<StoreMetadata> {
  const file = join(dir, METADATA_FILE)
  const text = await readJsonText(file, 'metadata file')
  const meta = parseMetadata(text, file)
  // A store directory is read to hash keys (readers, verify): refuse a hash they cannot
  // compute. (Manifests alone, for fetching, need no hasher.)
  if (!isKnownKeyHash(meta.keyHash)) throw new StoreError('RO_CORRUPT', `${file}: unknown "keyHash" ${JSON.stringify(meta.keyHash)}`)
  return meta
}

export function parseMetadata(text: string, file: string): StoreMetadata {
  return validateMetadata(parseJsonText(text, file), file)
}

/**
 * The text of a metadata file or version manifest, its size checked before it is read
 * (`what` names it in the error): RO_CORRUPT past MAX_METADATA_BYTES, RO_IO when unreadable.
 */
export async function readJsonText(file: string, what: string): Promise<string> {
  try {
    const fh = await open(file, 'r')
    try {
      const { size } = await fh.stat()
      if (size > MAX_METADATA_BYTES) throw new StoreError('RO_CORRUPT', `${file}: ${size} bytes, more than a ${what} can be`)
      return (await fh.readFile()).toString('utf8')
    } finally {
      await fh.close()
    }
  } catch (err) {
    if (err instanceof StoreError) throw err
    throw new StoreError('RO_IO', `${file}: cannot read: ${(err as Error).message}`, { cause: err })
  }
}

/** JSON text parsed; RO_CORRUPT naming the file when it is not JSON. */
export function parseJsonText(text: string, file: string): unknown {
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new StoreError('RO_CORRUPT', `${file}: not valid JSON: ${(err as Error).message}`, { cause: err })
  }
}

/** Checks every field a reader or fetcher relies on before trusting any of them. */
export function validateMetadata(json: unknown, file: string): StoreMetadata {
  const bad = (msg: string): never => {
    throw new StoreError('RO_CORRUPT', `${file}: ${msg}`)
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return bad('not a JSON object')
  const m = json as Record<string, unknown>
  if (m['format'] !== 'rostore') throw new StoreError('RO_BAD_FORMAT', `${file}: not a rostore metadata file`)
  const major = m['formatMajor']
  if (major !== FORMAT_MAJOR && major !== PARTITIONED_FORMAT_MAJOR) {
    throw new StoreError(
      'RO_BAD_FORMAT',
      `${file}: format major version ${JSON.stringify(major)}, this reader understands ${FORMAT_MAJOR} (node directories) and ${PARTITIONED_FORMAT_MAJOR} (partition files)`,
    )
  }
  if (major === PARTITIONED_FORMAT_MAJOR && m['partitionFiles'] !== undefined)
    throw new StoreError('RO_BAD_FORMAT', `${file}: a format-2 version manifest (a build output), not a node's metadata`)
  int(m, 'nodeId', bad)
  const { chunks, records, partitionCount } = checkStoreFields(m, bad)
  // Format 2: the chunk slots are those of the held partitions (node-view-check.ts).
  const slots = major === PARTITIONED_FORMAT_MAJOR ? checkNodeView(m, partitionCount, bad) : chunks
  const chunkRecords = m['chunkRecords']
  if (!Array.isArray(chunkRecords) || chunkRecords.length !== slots || !chunkRecords.every((n) => Number.isSafeInteger(n) && n >= 0)) {
    bad(`"chunkRecords" must list one record count per chunk slot (${slots})`)
  }
  if ((chunkRecords as number[]).reduce((a, b) => a + b, 0) !== records) bad('"records" is not the sum of "chunkRecords"')
  if (major === PARTITIONED_FORMAT_MAJOR) return json as StoreMetadata
  if (m['held'] !== undefined || m['dataVersion'] !== undefined) bad('"held" and "dataVersion" belong to format 2 only')
  const files = m['files']
  if (!Array.isArray(files)) return bad('"files" must be an array')
  const names = new Set<string>()
  for (const f of files as unknown[]) {
    const e = f as Record<string, unknown>
    if (typeof f !== 'object' || f === null || typeof e['name'] !== 'string' || !isChunkFileName(e['name'])) {
      bad(`"files" may only name chunk files (<n>.index, <n>.data), got ${JSON.stringify(e?.['name'])}`)
    }
    if (!Number.isSafeInteger(e['size']) || (e['size'] as number) < 0) bad(`file ${String(e['name'])}: bad size`)
    if (typeof e['checksum'] !== 'string' || !/^[0-9a-f]{8,128}$/.test(e['checksum'])) bad(`file ${String(e['name'])}: bad checksum`)
    if (names.has(e['name'] as string)) bad(`file ${String(e['name'])} listed twice`)
    names.add(e['name'] as string)
  }
  if (names.size !== chunks * 2) bad(`"files" must list ${chunks * 2} chunk files, lists ${names.size}`)
  for (let c = 0; c < chunks; c++) {
    if (!names.has(`${c}.index`) || !names.has(`${c}.data`)) bad(`chunk ${c} is missing from "files"`)
  }
  return json as StoreMetadata
}

/** Writes metadata.json durably: temp file, fsync, rename. */
export async function writeMetadata(dir: string, meta: StoreMetadata): Promise<void> {
  await writeJsonDurably(join(dir, METADATA_FILE), meta)
}

/** Writes `value` as JSON to `file` durably: temp file, fsync, rename (metadata and manifests). */
export async function writeJsonDurably(file: string, value: unknown): Promise<void> {
  const tmp = `${file}.tmp`
  await writeFile(tmp, JSON.stringify(value, null, 2) + '\n')
  const fh = await open(tmp, 'r+')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
  await rename(tmp, file)
}
