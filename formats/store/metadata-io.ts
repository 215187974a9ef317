import { open, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../common/errors'
import { isKnownKeyHash } from './key-hash'
import { isChunkFileName } from './layout'
import { CHECKSUM_ALGORITHMS, COMPRESSIONS, FORMAT_MAJOR, METADATA_FILE, type StoreMetadata } from './metadata'

/** Metadata files are small; anything bigger is not ours. */
export const MAX_METADATA_BYTES = 16 << 20

export async function readMetadata(dir: string): Promise<StoreMetadata> {
  const file = join(dir, METADATA_FILE)
  let text: string
  try {
    const fh = await open(file, 'r')
    try {
      const { size } = await fh.stat()
      if (size > MAX_METADATA_BYTES) throw new StoreError('RO_CORRUPT', `${file}: ${size} bytes, more than a metadata file can be`)
      text = (await fh.readFile()).toString('utf8')
    } finally {
      await fh.close()
    }
  } catch (err) {
    if (err instanceof StoreError) throw err
    throw new StoreError('RO_IO', `${file}: cannot read: ${(err as Error).message}`, { cause: err })
  }
  const meta = parseMetadata(text, file)
  // A store directory is read to hash keys (readers, verify): refuse a hash they cannot
  // compute. (Manifests alone, for fetching, need no hasher.)
  if (!isKnownKeyHash(meta.keyHash)) throw new StoreError('RO_CORRUPT', `${file}: unknown "keyHash" ${JSON.stringify(meta.keyHash)}`)
  return meta
}

export function parseMetadata(text: string, file: string): StoreMetadata {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new StoreError('RO_CORRUPT', `${file}: not valid JSON: ${(err as Error).message}`, { cause: err })
  }
  return validateMetadata(json, file)
}

/** Checks every field a reader or fetcher relies on before trusting any of them. */
export function validateMetadata(json: unknown, file: string): StoreMetadata {
  const bad = (msg: string): never => {
    throw new StoreError('RO_CORRUPT', `${file}: ${msg}`)
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return bad('not a JSON object')
  const m = json as Record<string, unknown>
  if (m['format'] !== 'rostore') throw new StoreError('RO_BAD_FORMAT', `${file}: not a rostore metadata file`)
  if (m['formatMajor'] !== FORMAT_MAJOR) {
    throw new StoreError(
      'RO_BAD_FORMAT',
      `${file}: format major version ${String(m['formatMajor'])}, this reader understands ${FORMAT_MAJOR}`,
    )
  }
  const int = (k: string, min = 0): number => {
    const v = m[k]
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) bad(`"${k}" must be an integer >= ${min}`)
    return v as number
  }
  const str = (k: string): string => {
    const v = m[k]
    if (typeof v !== 'string' || v.length === 0) bad(`"${k}" must be a non-empty string`)
    return v as string
  }
  int('formatMinor')
  str('store')
  int('version', 1)
  int('nodeId')
  str('clusterName')
  // Routing (verify, clients) needs the layout to be a whole ring holding `replication` nodes.
  const replication = int('replication', 1)
  str('keyHash')
  const chunks = int('chunks', 1)
  const records = int('records')
  if (!['string', 'bytes'].includes(m['keySerializer'] as string)) bad('"keySerializer" must be string or bytes')
  if (!['string', 'json', 'bytes', 'mixed'].includes(m['valueSerializer'] as string)) bad('unknown "valueSerializer"')
  if (!(COMPRESSIONS as readonly unknown[]).includes(m['compression'])) bad(`unknown compression ${JSON.stringify(m['compression'])}`)
  if (!(CHECKSUM_ALGORITHMS as readonly unknown[]).includes(m['checksumAlgorithm']))
    bad(`unknown checksum algorithm ${JSON.stringify(m['checksumAlgorithm'])}`)
  const chunkRecords = m['chunkRecords']
  if (!Array.isArray(chunkRecords) || chunkRecords.length !== chunks || !chunkRecords.every((n) => Number.isSafeInteger(n) && n >= 0)) {
    bad('"chunkRecords" must list one record count per chunk')
  }
  if ((chunkRecords as number[]).reduce((a, b) => a + b, 0) !== records) bad('"records" is not the sum of "chunkRecords"')
  const layout = m['layout']
  if (!Array.isArray(layout) || layout.length === 0) bad('"layout" must be a non-empty array')
  const ids = new Set<number>()
  const partitions = new Set<number>()
  for (const n of layout as unknown[]) {
    const node = n as Record<string, unknown>
    if (typeof n !== 'object' || n === null || !Number.isSafeInteger(node['id']) || !Array.isArray(node['partitions'])) {
      bad('"layout" entries must have "id" and "partitions"')
    }
    if (ids.has(node['id'] as number)) bad(`"layout" lists node ${String(node['id'])} twice`)
    ids.add(node['id'] as number)
    for (const p of node['partitions'] as unknown[]) {
      if (!Number.isSafeInteger(p) || (p as number) < 0 || partitions.has(p as number))
        bad(`"layout": bad or repeated partition ${JSON.stringify(p)}`)
      partitions.add(p as number)
    }
  }
  for (let p = 0; p < partitions.size; p++)
    if (!partitions.has(p)) bad(`"layout": partitions must be 0..${partitions.size - 1}, ${p} is missing`)
  if (replication > ids.size) bad(`"replication" ${replication} exceeds the ${ids.size} nodes of "layout"`)
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
  const file = join(dir, METADATA_FILE)
  const tmp = `${file}.tmp`
  await writeFile(tmp, JSON.stringify(meta, null, 2) + '\n')
  const fh = await open(tmp, 'r+')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
  await rename(tmp, file)
}
