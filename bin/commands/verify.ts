import type { Argv } from 'yargs'
import { verifyBuildOrNode } from '../../formats/store/scan/verify-tree'

export const command = 'verify <dir>'
export const describe = 'Check a node directory or a whole build output: structure, every record, every checksum'

export const builder = (y: Argv) =>
  y.positional('dir', { type: 'string', demandOption: true, describe: 'node-<id>/ directory or build output root' })

export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  const reports = await verifyBuildOrNode(a.dir)
  for (const r of reports) {
    process.stdout.write(
      // A format-2 build output is no node's (nodeId -1): every partition of the version.
      `ok ${r.dir}: store ${r.store} version ${r.version} ${r.nodeId < 0 ? 'build output (every partition)' : `node ${r.nodeId}`}, ${r.records} records, ${r.files} files, ${r.bytes} bytes\n`,
    )
  }
}
