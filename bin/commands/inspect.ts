import type { Argv } from 'yargs'
import { openStore } from '../../formats/store/read/store-reader'
import { compressionInfo } from '../../formats/store/layout/compression-info'
import { versionCodec } from '../../formats/store/chunk/dictionary-file'
import { dumpRecords } from '../../formats/store/scan/dump'
import { integerOption } from '../integer-option'

export const command = 'inspect <dir>'
export const describe = "Print a node directory's metadata, optionally its records"

export const builder = (y: Argv) =>
  y
    .positional('dir', { type: 'string', demandOption: true, describe: 'node-<id>/ directory' })
    .option('records', { type: 'boolean', default: false, describe: 'also dump records as JSON lines' })
    .option('limit', { ...integerOption('limit'), describe: 'at most this many records' })
    .option('get', { type: 'string', array: true, describe: 'look these keys up' })

export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  const reader = await openStore(a.dir)
  try {
    const { files, ...meta } = reader.metadata
    const bytes = files.reduce((s, f) => s + f.size, 0)
    // accessMode: how this process reads the store ('mmap' through the addon, or 'pread').
    process.stdout.write(
      JSON.stringify(
        { ...meta, files: files.length, bytes, accessMode: reader.accessMode, compressionInfo: compressionInfo(meta) },
        null,
        2,
      ) + '\n',
    )
    for (const key of a.get ?? []) {
      const v = reader.get(key)
      process.stdout.write(JSON.stringify({ key, found: v !== undefined, value: v?.toString('utf8') }) + '\n')
    }
  } finally {
    reader.close()
  }
  if (a.records) {
    const codec = await versionCodec(a.dir, reader.metadata)
    for (const r of dumpRecords(a.dir, reader.metadata, a.limit, codec)) process.stdout.write(JSON.stringify(r) + '\n')
  }
}
