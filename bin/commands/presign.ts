import type { Argv } from 'yargs'
import { presignBuild } from '../../client/push/presign-build'
import { integerOption } from '../integer-option'

export const command = 'presign <from>'
export const describe = 'Presigned URLs for a build in S3, for nodes without S3 credentials: prints the URL to give rostore push --from'

export const builder = (y: Argv) =>
  y
    .positional('from', { type: 'string', demandOption: true, describe: "the build's s3://bucket/prefix/" })
    .option('expires-in', { ...integerOption('expires-in'), default: 3600, describe: 'seconds every URL stays valid (at most 604800)' })

export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  const r = await presignBuild({ from: a.from, expiresSeconds: a['expires-in'] })
  // The URL is a credential: stdout only, for the caller to pass on; the rest to stderr.
  process.stdout.write(`${r.url}\n`)
  process.stderr.write(`${r.files} files presigned for ${r.expiresSeconds} s; index ${r.index}\n`)
}
