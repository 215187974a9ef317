import { StoreError } from '../common/errors'
import { isChunkFileName } from '../formats/store/layout'
import { CHECKSUM_ALGORITHMS, type StoreMetadata } from '../formats/store/metadata'
import { validateMetadata } from '../formats/store/metadata-io'

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
 * Codes: unparsable bytes → RO_FETCH_FAILED (often an error page or a cut transfer);
 * names, sizes, algorithm, node id or expectations wrong → RO_BAD_REQUEST; an unknown
 * format major → RO_BAD_FORMAT.
 */
export function parseManifest(bytes: Buffer, where: string, want: ManifestExpectations): StoreMetadata {
  let json: unknown
  try {
    json = JSON.parse(bytes.toString('utf8'))
  } catch (err) {
    throw new StoreError('RO_FETCH_FAILED', `${where}: not valid JSON: ${(err as Error).message}`, { cause: err })
  }
  const refuse = (msg: string): never => {
    throw new StoreError('RO_BAD_REQUEST', `${where}: ${msg}`)
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return refuse('not a JSON object')
  const m = json as Record<string, unknown>
  if (m['format'] !== 'rostore') refuse(`not a rostore manifest (format ${JSON.stringify(m['format'])})`)
  if (m['nodeId'] !== want.nodeId) refuse(`manifest is for node ${JSON.stringify(m['nodeId'])}, this is node ${want.nodeId}`)
  const algorithm = m['checksumAlgorithm']
  if (!(CHECKSUM_ALGORITHMS as readonly unknown[]).includes(algorithm)) refuse(`unknown checksum algorithm ${JSON.stringify(algorithm)}`)
  const hexLength = DIGEST_HEX_LENGTH[algorithm as (typeof CHECKSUM_ALGORITHMS)[number]]
  const files = m['files']
  if (!Array.isArray(files)) return refuse('"files" must be an array')
  let total = 0
  for (const f of files as unknown[]) {
    const e = (typeof f === 'object' && f !== null ? f : {}) as Record<string, unknown>
    const name = e['name']
    // The one check that keeps a manifest from writing outside destDir.
    if (typeof name !== 'string' || !isChunkFileName(name))
      refuse(`refusing file name ${JSON.stringify(name)}: only <n>.index and <n>.data may be listed`)
    const size = e['size']
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
      refuse(`file ${String(name)}: size must be a non-negative integer`)
    total += size as number
    const checksum = e['checksum']
    if (typeof checksum !== 'string' || !new RegExp(`^[0-9a-f]{${hexLength}}$`).test(checksum)) {
      refuse(`file ${String(name)}: checksum must be ${hexLength} lower-case hex digits`)
    }
  }
  if (!Number.isSafeInteger(total)) refuse('file sizes add up beyond any disk')
  if (want.store !== undefined && m['store'] !== want.store)
    refuse(`manifest is for store ${JSON.stringify(m['store'])}, expected "${want.store}"`)
  if (want.version !== undefined && m['version'] !== want.version)
    refuse(`manifest is for version ${JSON.stringify(m['version'])}, expected ${want.version}`)
  try {
    // The format's own checks (chunk list complete, counts consistent), shared with readers.
    return validateMetadata(json, where)
  } catch (err) {
    if (err instanceof StoreError && err.code === 'RO_CORRUPT') throw new StoreError('RO_BAD_REQUEST', err.message, { cause: err })
    throw err
  }
}
