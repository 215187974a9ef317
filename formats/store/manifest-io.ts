import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../common/errors'
import { isKnownKeyHash } from './key-hash'
import { METADATA_FILE, type StoreMetadata } from './metadata'
import { MAX_METADATA_BYTES, validateMetadata } from './metadata-io'
import { checkStoreFields, int } from './metadata-fields'
import { checkFileList, partitionFileNames } from './node-view-check'
import { PARTITIONED_FORMAT_MAJOR, type PartitionEntry, type VersionManifest } from './partition-files'

/**
 * Reads a format-2 version manifest: a build output's metadata.json, or a node's
 * manifest.json (partition-files.ts MANIFEST_FILE) beside its node view.
 */
export async function readManifest(dir: string, name: string): Promise<VersionManifest> {
  return validateManifest(await readJson(join(dir, name)), join(dir, name))
}

/**
 * A directory's metadata.json, whichever it is: a node directory's (format 1 or a
 * format-2 node view) or a format-2 build output's version manifest (it lists
 * `partitionFiles`). For tools that take either (verify).
 */
export async function readNodeOrBuild(
  dir: string,
): Promise<{ readonly kind: 'node'; readonly meta: StoreMetadata } | { readonly kind: 'build'; readonly manifest: VersionManifest }> {
  const file = join(dir, METADATA_FILE)
  const json = await readJson(file)
  const isManifest = typeof json === 'object' && json !== null && 'partitionFiles' in json
  const found = isManifest
    ? ({ kind: 'build', manifest: validateManifest(json, file) } as const)
    : ({ kind: 'node', meta: validateMetadata(json, file) } as const)
  // As readMetadata: a directory is read to hash keys, so a hash no reader computes is refused here.
  const keyHash = found.kind === 'build' ? found.manifest.keyHash : found.meta.keyHash
  if (!isKnownKeyHash(keyHash)) throw new StoreError('RO_CORRUPT', `${file}: unknown "keyHash" ${JSON.stringify(keyHash)}`)
  return found
}

/**
 * The manifest seen as the metadata of one directory holding every partition (a build
 * output): slot s × chunks + c is chunk c of partition s. Lets verify and dumps walk a
 * build output with the node-directory code; nodeId -1 stands for "no node".
 */
export function wholeVersionView(m: VersionManifest): StoreMetadata {
  const entries: readonly PartitionEntry[] = m.partitionFiles
  return {
    format: 'rostore',
    formatMajor: m.formatMajor,
    formatMinor: m.formatMinor,
    store: m.store,
    version: m.version,
    dataVersion: m.dataVersion,
    nodeId: -1,
    held: entries.map((e) => e.partition),
    clusterName: m.clusterName,
    layout: m.layout,
    replication: m.replication,
    keyHash: m.keyHash,
    keySerializer: m.keySerializer,
    valueSerializer: m.valueSerializer,
    compression: m.compression,
    chunks: m.chunks,
    records: m.records,
    chunkRecords: entries.flatMap((e) => e.chunkRecords),
    checksumAlgorithm: m.checksumAlgorithm,
    files: entries.flatMap((e) => e.files),
    build: m.build,
  }
}

async function readJson(file: string): Promise<unknown> {
  let text: string
  try {
    const bytes = await readFile(file)
    if (bytes.length > MAX_METADATA_BYTES) throw new StoreError('RO_CORRUPT', `${file}: more than a manifest can be`)
    text = bytes.toString('utf8')
  } catch (err) {
    if (err instanceof StoreError) throw err
    throw new StoreError('RO_IO', `${file}: cannot read: ${(err as Error).message}`, { cause: err })
  }
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new StoreError('RO_CORRUPT', `${file}: not valid JSON: ${(err as Error).message}`, { cause: err })
  }
}

/** Checks a version manifest: the shared fields, then every partition 0..P-1 with its chunks' files in order. */
export function validateManifest(json: unknown, file: string): VersionManifest {
  const bad = (msg: string): never => {
    throw new StoreError('RO_CORRUPT', `${file}: ${msg}`)
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return bad('not a JSON object')
  const m = json as Record<string, unknown>
  if (m['format'] !== 'rostore') throw new StoreError('RO_BAD_FORMAT', `${file}: not a rostore manifest`)
  if (m['formatMajor'] !== PARTITIONED_FORMAT_MAJOR || !Array.isArray(m['partitionFiles'])) {
    throw new StoreError(
      'RO_BAD_FORMAT',
      `${file}: not a version manifest (format major ${JSON.stringify(m['formatMajor'])}; a manifest is format ${PARTITIONED_FORMAT_MAJOR} with "partitionFiles")`,
    )
  }
  const { chunks, records, partitionCount } = checkStoreFields(m, bad)
  const dataVersion = int(m, 'dataVersion', bad, 1)
  if (dataVersion > (m['version'] as number)) bad('"dataVersion" is newer than "version"')
  if (m['partitions'] !== partitionCount) bad(`"partitions" must be the layout's ${partitionCount}`)
  const entries = m['partitionFiles'] as unknown[]
  if (entries.length !== partitionCount) bad(`"partitionFiles" must list the ${partitionCount} partitions, lists ${entries.length}`)
  let sum = 0
  entries.forEach((x, p) => {
    const e = x as Record<string, unknown>
    if (typeof x !== 'object' || x === null || e['partition'] !== p) bad(`"partitionFiles"[${p}] must be partition ${p}`)
    const n = int(e, 'records', (msg) => bad(`partition ${p}: ${msg}`))
    const cr = e['chunkRecords']
    if (!Array.isArray(cr) || cr.length !== chunks || !cr.every((r) => Number.isSafeInteger(r) && r >= 0))
      bad(`partition ${p}: "chunkRecords" must list ${chunks} record counts`)
    if ((cr as number[]).reduce((a, b) => a + b, 0) !== n) bad(`partition ${p}: "records" is not the sum of "chunkRecords"`)
    checkFileList(e['files'], partitionFileNames(p, chunks), (msg) => bad(`partition ${p}: ${msg}`))
    sum += n
  })
  if (sum !== records) bad(`"records" ${records} is not the sum of the partitions' ${sum}`)
  return json as VersionManifest
}
