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
  'read-token'?: string
  'read-token-file'?: string
  'resp-port'?: number
  'resp-default-store'?: string
  'resp-max-clients'?: number
  'resp-idle-timeout-ms'?: number
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
    .option('read-token', {
      type: 'string',
      describe: 'token reads need: HTTP bearer, RESP AUTH (prefer env ROSTORE_READ_TOKEN or --read-token-file); off by default',
    })
    .option('read-token-file', { type: 'string', describe: 'file whose first line is the read token' })
    .option('resp-port', {
      type: 'number',
      describe:
        "serve reads over RESP (the Redis protocol) on this port, 0 for any (default: the node's respPort in cluster.json, else none)",
    })
    .option('resp-default-store', { type: 'string', describe: 'RESP keys are bare keys of this store instead of <store>:<key>' })
    .option('resp-max-clients', { type: 'number', describe: 'open RESP connections at most (default 10000)' })
    .option('resp-idle-timeout-ms', { type: 'number', describe: 'close RESP connections idle this long, 0 for never (default 300000)' })
    .check((a) => {
      if (!Number.isSafeInteger(a['node-id']) || a['node-id'] < 0) throw new Error('--node-id must be a non-negative integer')
      if (!Number.isSafeInteger(a['keep-versions']) || a['keep-versions'] < 0)
        throw new Error('--keep-versions must be a non-negative integer')
      if (a.port !== undefined && (!Number.isSafeInteger(a.port) || a.port < 0 || a.port > 65535))
        throw new Error('--port must be 0..65535')
      if (a['admin-token'] !== undefined && a['admin-token-file'] !== undefined) {
        throw new Error('give --admin-token or --admin-token-file, not both')
      }
      if (a['read-token'] !== undefined && a['read-token-file'] !== undefined)
        throw new Error('give --read-token or --read-token-file, not both')
      if (a['resp-port'] !== undefined && (!Number.isSafeInteger(a['resp-port']) || a['resp-port'] < 0 || a['resp-port'] > 65535))
        throw new Error('--resp-port must be 0..65535')
      if (a['resp-max-clients'] !== undefined && (!Number.isSafeInteger(a['resp-max-clients']) || a['resp-max-clients'] < 1))
        throw new Error('--resp-max-clients must be a positive integer')
      if (a['resp-idle-timeout-ms'] !== undefined && (!Number.isSafeInteger(a['resp-idle-timeout-ms']) || a['resp-idle-timeout-ms'] < 0))
        throw new Error('--resp-idle-timeout-ms must be a non-negative integer')
      return true
    }) as unknown as Argv<ServeArgs>
}

function readToken(a: ServeArgs): string | undefined {
  if (a['read-token-file'] !== undefined) {
    return readFileSync(a['read-token-file'], 'utf8').split(/\r?\n/)[0]?.trim() || undefined
  }
  return a['read-token'] ?? (process.env.ROSTORE_READ_TOKEN || undefined)
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
      readToken: readToken(argv),
      resp: {
        port: argv['resp-port'],
        defaultStore: argv['resp-default-store'],
        maxClients: argv['resp-max-clients'],
        idleTimeoutMs: argv['resp-idle-timeout-ms'],
      },
      keepVersions: argv['keep-versions'],
      bind: argv.bind,
      port: argv.port,
      fetchMaxBytesPerSec: argv['fetch-max-bytes-per-sec'],
      allowedSources: argv['allowed-source'],
      accessLog: argv['access-log'],
      drainTimeoutMs: argv['drain-timeout-ms'],
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
