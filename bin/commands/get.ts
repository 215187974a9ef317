import { StoreError } from '../../common/errors'
import { readFile } from 'node:fs/promises'
import type { Argv } from 'yargs'
import { StoreClient } from '../../client/store-client'
import { clusterOptions, loadClusterOption, readToken, readTokenOption } from '../cluster-options'
import { integerOption } from '../integer-option'

export const command = 'get [keys..]'
export const describe = 'Read keys through the routing client (master first, replicas on failure)'

export const builder = (y: Argv) =>
  readTokenOption(clusterOptions(y))
    .positional('keys', { type: 'string', array: true, describe: 'keys to read' })
    .option('keys-file', { type: 'string', describe: 'file with one key per line' })
    .option('json', { type: 'boolean', default: false, describe: 'one JSON line per key: {"key", "found", "value"}' })
    .option('timeout', { ...integerOption('timeout'), default: 2000, describe: 'per-request timeout in ms' })
    .option('transport', {
      choices: ['auto', 'http', 'resp'] as const,
      default: 'auto' as const,
      describe: "read over HTTP or the nodes' RESP ports; auto: RESP when every node of the store's layout has a RESP port",
    })
    .option('decompress', {
      choices: ['node', 'client'] as const,
      default: 'node' as const,
      describe: "where values are decompressed; client: they travel as stored, with the version's dictionary fetched once (HTTP only)",
    })

/** One key without --json: the raw value on stdout, exit 1 when absent. */
export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  const keys = [...(a.keys ?? []).map(String)]
  if (a['keys-file']) keys.push(...(await readFile(a['keys-file'], 'utf8')).split(/\r?\n/).filter((k) => k.length > 0))
  if (keys.length === 0) throw new StoreError('RO_BAD_OPTION', 'give keys on the command line or with --keys-file')
  const client = await StoreClient.connect({
    cluster: await loadClusterOption(a),
    store: a.store,
    timeoutMs: a.timeout,
    transport: a.transport,
    decompress: a.decompress,
    readToken: readToken(a),
  })
  try {
    const values = keys.length === 1 ? [await client.get(keys[0]!)] : await client.getMany(keys)
    if (!a.json && keys.length === 1) {
      const v = values[0]
      if (v === undefined) {
        process.stderr.write(`rostore: key ${JSON.stringify(keys[0])} not found in ${a.store}\n`)
        process.exitCode = 1
      } else process.stdout.write(v)
      return
    }
    const lines = keys.map((key, i) => {
      const v = values[i]
      return JSON.stringify(
        v === undefined ? { key, found: false } : { key, found: true, value: a.json ? client.decode(v) : v.toString('utf8') },
      )
    })
    process.stdout.write(lines.join('\n') + '\n')
  } finally {
    client.close()
  }
}
