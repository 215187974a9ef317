import { StoreError } from '../common/errors'
import { CHECKSUM_ALGORITHMS, type StoreMetadata } from '../formats/store/layout/metadata'
import { validateMetadata } from '../formats/store/layout/metadata-io'
import { isStoreFileName } from '../formats/store/layout/slots'

export interface ManifestExpectations {
  readonly nodeId: number
  readonly store?: string
  readonly version?: number
}

const DIGEST_HEX_LENGTH: Record<(typeof CHECKSUM_ALGORITHMS)[number], number> = { xxh64: 16 }

/**
 * Parses and vets a downloaded metadata.json before any of its names or sizes is used:
 * the manifest decides which files get created under destDir and how much disk gets
 * claimed, so a hostile or mistaken source must not steer either.
 *
 * Messages say what is wrong without quoting the bytes received (a source pointed at
 * /etc/passwd must not answer with its first line): what was received is in the error's
 * `cause`, for the node's log.
 *
 * Codes: unparsable bytes → RO_FETCH_FAILED (often an error page or a cut transfer);
 * names, sizes, algorithm, node id or expectations wrong → RO_BAD_REQUEST; an unknown
 * format major → RO_BAD_FORMAT.
 */
export function parseManifest(bytes: Buffer, where: string, want: ManifestExpectations): StoreMetadata {
  let json: unknown
  try {
    json = JSON.parse(bytes.toString('utf8'))
  } catch (err) {
    throw new StoreError('RO_FETCH_FAILED', `${where}: not valid JSON, so not a manifest (${bytes.length} bytes)`, { cause: err })
  }
  const refuse = (msg: string, received?: string): never => {
    throw new StoreError(
      'RO_BAD_REQUEST',
      `${where}: ${msg}`,
      received === undefined ? undefined : { cause: new Error(`received ${received}`) },
    )
  }
  const shown = (v: unknown): string => JSON.stringify(v)?.slice(0, 200) ?? 'nothing'
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return refuse('not a JSON object, so not a manifest')
  const m = json as Record<string, unknown>
  if (m['format'] !== 'rostore') refuse('not a rostore manifest (no "format": "rostore")', `format ${shown(m['format'])}`)
  if (m['nodeId'] !== want.nodeId) refuse(`the manifest is for another node, this is node ${want.nodeId}`, `nodeId ${shown(m['nodeId'])}`)
  const algorithm = m['checksumAlgorithm']
  if (!(CHECKSUM_ALGORITHMS as readonly unknown[]).includes(algorithm))
    refuse(`unknown checksum algorithm (known: ${CHECKSUM_ALGORITHMS.join(', ')})`, `checksumAlgorithm ${shown(algorithm)}`)
  const hexLength = DIGEST_HEX_LENGTH[algorithm as (typeof CHECKSUM_ALGORITHMS)[number]]
  const files = m['files']
  if (!Array.isArray(files)) return refuse('"files" must be an array')
  let total = 0
  for (const [i, f] of (files as unknown[]).entries()) {
    const e = (typeof f === 'object' && f !== null ? f : {}) as Record<string, unknown>
    const name = e['name']
    // The one check that keeps a manifest from writing outside destDir. Either format's
    // names pass here; validateMetadata then holds each format to its own.
    if (typeof name !== 'string' || !isStoreFileName(name))
      refuse(
        `refusing the file name of files[${i}]: only <n>.index, <n>.data, p<P>-c<C>.index and p<P>-c<C>.data may be listed`,
        `name ${shown(name)}`,
      )
    const size = e['size']
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) refuse(`files[${i}]: size must be a non-negative integer`)
    total += size as number
    const checksum = e['checksum']
    if (typeof checksum !== 'string' || !new RegExp(`^[0-9a-f]{${hexLength}}$`).test(checksum)) {
      refuse(`files[${i}]: checksum must be ${hexLength} lower-case hex digits`)
    }
  }
  if (!Number.isSafeInteger(total)) refuse('file sizes add up beyond any disk')
  if (want.store !== undefined && m['store'] !== want.store)
    refuse(`the manifest is for another store, expected "${want.store}"`, `store ${shown(m['store'])}`)
  if (want.version !== undefined && m['version'] !== want.version)
    refuse(`the manifest is for another version, expected ${want.version}`, `version ${shown(m['version'])}`)
  try {
    // The format's own checks (chunk list complete, counts consistent), shared with readers.
    return validateMetadata(json, where)
  } catch (err) {
    if (err instanceof StoreError && err.code === 'RO_CORRUPT') throw new StoreError('RO_BAD_REQUEST', err.message, { cause: err })
    throw err
  }
}
