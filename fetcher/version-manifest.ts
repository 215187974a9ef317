import { StoreError } from '../common/errors'
import { buildRing } from '../cluster/routing'
import { validateManifest } from '../formats/store/layout/manifest-io'
import { CHECKSUM_ALGORITHMS } from '../formats/store/layout/metadata'
import { parsePartitionFileName, PARTITIONED_FORMAT_MAJOR, type VersionManifest } from '../formats/store/layout/partition-files'

export interface VersionManifestExpectations {
  readonly store?: string
  readonly version?: number
}

/** Bound on a manifest's partitions: far above any ring, far below what would eat a node's heap. */
const MAX_PARTITIONS = 1 << 16
const MAX_CHUNKS = 1 << 16

/**
 * Parses and vets a format-2 version manifest (a build output's `metadata.json`, a peer's
 * `manifest.json`, or one a pusher sent inline) before any of its names or sizes is used:
 * it decides which files get created in the fetch's directory and how much disk is claimed.
 * Every file name must be `p<P>-c<C>.index|data` of its own partition and chunk, so nothing
 * can be written outside the directory. Messages never quote the bytes received; the
 * format's own consistency checks (formats/store/layout/manifest-io.ts) come last.
 */
export function parseVersionManifest(bytes: Buffer, where: string, want: VersionManifestExpectations = {}): VersionManifest {
  let json: unknown
  try {
    json = JSON.parse(bytes.toString('utf8'))
  } catch (err) {
    throw new StoreError('RO_FETCH_FAILED', `${where}: not valid JSON, so not a manifest (${bytes.length} bytes)`, { cause: err })
  }
  const refuse = (msg: string): never => {
    throw new StoreError('RO_BAD_REQUEST', `${where}: ${msg}`)
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return refuse('not a JSON object, so not a manifest')
  const m = json as Record<string, unknown>
  const posInt = (k: string, min = 1): number => {
    const v = m[k]
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) refuse(`"${k}" must be an integer >= ${min}`)
    return v as number
  }
  if (m['format'] !== 'rostore') refuse('not a rostore manifest (no "format": "rostore")')
  if (m['formatMajor'] !== PARTITIONED_FORMAT_MAJOR) {
    throw new StoreError('RO_BAD_FORMAT', `${where}: not a format-${PARTITIONED_FORMAT_MAJOR} version manifest`)
  }
  if (typeof m['store'] !== 'string' || m['store'] === '') refuse('"store" must be a store name')
  const version = posInt('version')
  const dataVersion = posInt('dataVersion')
  if (dataVersion > version) refuse('"dataVersion" is newer than "version"')
  const replication = posInt('replication')
  const chunks = posInt('chunks')
  const partitions = posInt('partitions')
  if (chunks > MAX_CHUNKS || partitions > MAX_PARTITIONS) refuse('more partitions or chunks than a node can hold')
  if (!(CHECKSUM_ALGORITHMS as readonly unknown[]).includes(m['checksumAlgorithm']))
    refuse(`unknown checksum algorithm (known: ${CHECKSUM_ALGORITHMS.join(', ')})`)
  const layout = m['layout']
  if (!Array.isArray(layout) || layout.length === 0) return refuse('"layout" must be a non-empty array of nodes')
  let ringPartitions: number
  try {
    ringPartitions = buildRing(layout as VersionManifest['layout']).partitionCount
  } catch (err) {
    throw new StoreError('RO_BAD_REQUEST', `${where}: "layout" is not a valid ring`, { cause: err })
  }
  if (ringPartitions !== partitions) refuse('"partitions" differs from the layout\'s partition count')
  if (replication > layout.length) refuse('"replication" is above the node count')
  const entries = m['partitionFiles']
  if (!Array.isArray(entries) || entries.length !== partitions) return refuse('"partitionFiles" must list every partition once')
  let total = 0
  for (const [p, raw] of (entries as unknown[]).entries()) {
    const e = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>
    if (e['partition'] !== p) refuse(`partitionFiles[${p}] is not partition ${p}`)
    const files = e['files']
    if (!Array.isArray(files) || files.length !== 2 * chunks) refuse(`partition ${p}: "files" must hold an index and a data file per chunk`)
    for (const [i, f] of (files as unknown[]).entries()) {
      const fe = (typeof f === 'object' && f !== null ? f : {}) as Record<string, unknown>
      const name = fe['name']
      const parsed = typeof name === 'string' ? parsePartitionFileName(name) : undefined
      // The one check that keeps a manifest from writing outside the fetch's directory.
      if (parsed === undefined || parsed.partition !== p || parsed.chunk >= chunks)
        refuse(`partition ${p}: files[${i}] is not a file name of this partition (p${p}-c<chunk>.index|data)`)
      const size = fe['size']
      if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
        refuse(`partition ${p}: files[${i}]: size must be a non-negative integer`)
      total += size as number
      if (typeof fe['checksum'] !== 'string' || !/^[0-9a-f]{16}$/.test(fe['checksum']))
        refuse(`partition ${p}: files[${i}]: checksum must be 16 lower-case hex digits`)
    }
    const names = new Set((files as { name: string }[]).map((f) => f.name))
    if (names.size !== (files as unknown[]).length) refuse(`partition ${p}: a file is listed twice`)
  }
  if (!Number.isSafeInteger(total)) refuse('file sizes add up beyond any disk')
  if (want.store !== undefined && m['store'] !== want.store) refuse(`the manifest is for another store, expected "${want.store}"`)
  if (want.version !== undefined && version !== want.version) refuse(`the manifest is for another version, expected ${want.version}`)
  try {
    // The format's own checks (record counts, file order), shared with the readers.
    return validateManifest(json, where)
  } catch (err) {
    if (err instanceof StoreError && err.code === 'RO_CORRUPT') throw new StoreError('RO_BAD_REQUEST', err.message, { cause: err })
    throw err
  }
}
