import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../common/errors'
import { MAX_METADATA_BYTES } from './metadata-io'
import { checkStoreFields, int } from './metadata-fields'
import { checkFileList, partitionFileNames } from './node-view-check'
import { PARTITIONED_FORMAT_MAJOR, type VersionManifest } from './partition-files'

/**
 * Reads a format-2 version manifest: a build output's metadata.json, or a node's
 * manifest.json (partition-files.ts MANIFEST_FILE) beside its node view.
 */
export async function readManifest(dir: string, name: string): Promise<VersionManifest> {
  const file = join(dir, name)
  let text: string
  try {
    const bytes = await readFile(file)
    if (bytes.length > MAX_METADATA_BYTES) throw new StoreError('RO_CORRUPT', `${file}: more than a manifest can be`)
    text = bytes.toString('utf8')
  } catch (err) {
    if (err instanceof StoreError) throw err
    throw new StoreError('RO_IO', `${file}: cannot read: ${(err as Error).message}`, { cause: err })
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new StoreError('RO_CORRUPT', `${file}: not valid JSON: ${(err as Error).message}`, { cause: err })
  }
  return validateManifest(json, file)
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
