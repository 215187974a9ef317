// PLACEHOLDER until helper A's manifest validation merges.
import { StoreError } from '../../common/errors'
import type { VersionManifest } from './partition-files'

export function validateManifest(json: unknown, file: string): VersionManifest {
  const m = json as Record<string, unknown>
  if (typeof json !== 'object' || json === null || m['format'] !== 'rostore' || m['formatMajor'] !== 2)
    throw new StoreError('RO_BAD_FORMAT', `${file}: not a format-2 manifest`)
  return json as VersionManifest
}
