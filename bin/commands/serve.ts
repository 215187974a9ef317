import { readFileSync } from 'node:fs'
import type { ArgumentsCamelCase, Argv } from 'yargs'
import { errorMessage, isStoreError } from '../../common/errors'
import { createLogger } from '../../server/log'
import { startNode } from '../../server/node'
import { DEFAULT_KEEP_VERSIONS } from '../../swapper/store-versions'

interface ServeArgs {
  cluster: string
  'node-id': number
  'data-dir': string
  'admin-token'?: string
  'admin-token-file'?: string
  'keep-versions': number
  bind?: string
  port?: number
  'fetch-max-bytes-per-sec'?: number
  'allowed-source'?: string[]
  'access-log': boolean
  'drain-timeout-ms': number
  'max-connections'?: number
  'max-response-bytes'?: number
  'send-timeout-ms'?: number
  'self-repair': boolean
  'peer-check-timeout-ms'?: number
  'peer-check-grace-ms'?: number
}

export const command = 'serve'
export const describe = 'Serve the stores of one node over HTTP, with atomic swap and rollback of versions'

export function builder(y: Argv): Argv<ServeArgs> {
  return y
    .option('cluster', { type: 'string', demandOption: true, describe: "cluster.json (this node's host and port come from it)" })
    .option('node-id', { type: 'number', demandOption: true, describe: 'id of this node in cluster.json' })
    .option('data-dir', { type: 'string', demandOption: true, describe: 'directory holding one sub-directory per store' })
    .option('admin-token', {
      type: 'string',
      describe:
        'bearer token of the admin API (prefer env ROSTORE_ADMIN_TOKEN or --admin-token-file: command lines are visible to other users)',
    })
    .option('admin-token-file', { type: 'string', describe: 'file whose first line is the admin token' })
    .option('keep-versions', { type: 'number', default: DEFAULT_KEEP_VERSIONS, describe: 'backups kept besides the live version' })
    .option('bind', { type: 'string', describe: "address to listen on (default: the node's host in cluster.json)" })
    .option('port', { type: 'number', describe: "port to listen on, 0 for any (default: the node's port in cluster.json)" })
    .option('fetch-max-bytes-per-sec', { type: 'number', describe: 'node-wide rate limit of fetches' })
    .option('allowed-source', { type: 'string', array: true, describe: 'fetch sources must lie under one of these (repeatable)' })
    .option('access-log', { type: 'boolean', default: false, describe: 'log one line per request' })
    .option('drain-timeout-ms', { type: 'number', default: 30_000, describe: 'on SIGTERM, wait this long for in-flight requests' })
    .option('max-connections', { type: 'number', describe: 'connections served at once; more are closed on arrival (default 2048)' })
    .option('max-response-bytes', {
      type: 'number',
      describe: 'largest read response body; multi-gets stop there and clients ask again (default 67108864)',
    })
    .option('send-timeout-ms', { type: 'number', describe: 'cut a read response that sends nothing for this long (default 30000)' })
    .option('self-repair', {
      type: 'boolean',
      default: true,
      describe: 'fetch a version this node missed (it was down during a push) from the push source; --no-self-repair waits for a push',
    })
    .option('peer-check-timeout-ms', { type: 'number', describe: "at startup, wait this long for each peer's push records (default 3000)" })
    .option('peer-check-grace-ms', {
      type: 'number',
      describe: 'with no peer answering at startup, refuse reads of the stores this long, then serve them (default 30000)',
    })
    .check((a) => {
      if (!Number.isSafeInteger(a['node-id']) || a['node-id'] < 0) throw new Error('--node-id must be a non-negative integer')
      if (!Number.isSafeInteger(a['keep-versions']) || a['keep-versions'] < 0)
        throw new Error('--keep-versions must be a non-negative integer')
      if (a.port !== undefined && (!Number.isSafeInteger(a.port) || a.port < 0 || a.port > 65535))
        throw new Error('--port must be 0..65535')
      if (a['admin-token'] !== undefined && a['admin-token-file'] !== undefined) {
        throw new Error('give --admin-token or --admin-token-file, not both')
      }
      return true
    }) as unknown as Argv<ServeArgs>
}

function adminToken(a: ServeArgs): string | undefined {
  if (a['admin-token-file'] !== undefined) {
    return readFileSync(a['admin-token-file'], 'utf8').split(/\r?\n/)[0]?.trim() || undefined
  }
  return a['admin-token'] ?? (process.env.ROSTORE_ADMIN_TOKEN || undefined)
}

/** Runs until SIGTERM/SIGINT; then drains and exits (0 when everything drained in time). */
export async function handler(argv: ArgumentsCamelCase<ServeArgs>): Promise<void> {
  const log = createLogger()
  // Signals are handled from the start: one arriving while stores are still being
  // recovered and opened stops the node as soon as it is up.
  let signals = 0
  let stopRequested: (() => void) | undefined
  const stopSignal = new Promise<void>((resolve) => (stopRequested = resolve))
  const onSignal = (signal: NodeJS.Signals): void => {
    signals++
    if (signals > 1) {
      log.warn('shutdown-forced', { signal })
      process.exit(1)
    }
    log.info('signal', { signal })
    stopRequested?.()
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)

  let node
  try {
    node = await startNode({
      clusterPath: argv.cluster,
      nodeId: argv['node-id'],
      dataDir: argv['data-dir'],
      adminToken: adminToken(argv),
      keepVersions: argv['keep-versions'],
      bind: argv.bind,
      port: argv.port,
      fetchMaxBytesPerSec: argv['fetch-max-bytes-per-sec'],
      allowedSources: argv['allowed-source'],
      accessLog: argv['access-log'],
      drainTimeoutMs: argv['drain-timeout-ms'],
      maxConnections: argv['max-connections'],
      maxResponseBytes: argv['max-response-bytes'],
      sendTimeoutMs: argv['send-timeout-ms'],
      selfRepair: argv['self-repair'],
      peerCheckTimeoutMs: argv['peer-check-timeout-ms'],
      peerCheckGraceMs: argv['peer-check-grace-ms'],
      log,
    })
  } catch (err) {
    log.error('start-failed', { code: isStoreError(err) ? err.code : undefined, error: errorMessage(err) })
    process.exit(1)
  }
  await stopSignal
  let drained = false
  try {
    drained = await node.close()
  } catch (err) {
    log.error('shutdown-failed', { error: errorMessage(err) })
  }
  process.exit(drained ? 0 : 1)
}
