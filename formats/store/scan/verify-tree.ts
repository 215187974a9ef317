import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { StoreError } from '../../../common/errors'
import { METADATA_FILE } from '../layout/metadata'
import { verifyStore, type VerifyReport } from './verify'

/**
 * `dir` is one node directory (either format), a format-2 build output (its metadata.json
 * is the version manifest: verifyStore checks every partition), or a format-1 build
 * output holding node-<id>/ directories.
 */
export async function verifyBuildOrNode(dir: string): Promise<VerifyReport[]> {
  if (existsSync(join(dir, METADATA_FILE))) return [await verifyStore(dir)]
  const nodes = existsSync(dir)
    ? readdirSync(dir)
        .filter((n) => /^node-\d+$/.test(n))
        .sort()
    : []
  if (nodes.length === 0)
    throw new StoreError('RO_NOT_FOUND', `${dir}: neither a node directory (no ${METADATA_FILE}) nor a build output (no node-<id>/)`)
  const reports: VerifyReport[] = []
  for (const n of nodes) reports.push(await verifyStore(join(dir, n)))
  return reports
}
