import type { Argv } from 'yargs'
import { verifyBuildOrNode } from '../../formats/store/verify-tree'

export const command = 'verify <dir>'
export const describe = 'Check a node directory or a whole build output: structure, every record, every checksum'

export const builder = (y: Argv) =>
  y.positional('dir', { type: 'string', demandOption: true, describe: 'node-<id>/ directory or build output root' })

export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  const reports = await verifyBuildOrNode(a.dir)
  for (const r of reports) {
    process.stdout.write(
      `ok ${r.dir}: store ${r.store} version ${r.version} node ${r.nodeId}, ${r.records} records, ${r.files} files, ${r.bytes} bytes\n`,
    )
  }
}
