import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import type { ArgumentsCamelCase, Argv } from 'yargs'
import { errorMessage, isStoreError, StoreError } from '../../common/errors'
import { PRELOADS, type Preload } from '../../formats/store/store-reader-api'
import { createLogger } from '../../server/log'
import { startNode } from '../../server/node'
import { loadTlsFiles } from '../../server/tls'
import { readCaFile } from '../cluster-options'
import { DEFAULT_KEEP_VERSIONS } from '../../swapper/store-versions'
import { integerOption } from '../integer-option'

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
  'stream-max-bytes-per-sec'?: number
  'allowed-source'?: string[]
  'access-log': boolean
  'drain-timeout-ms': number
  'version-drain-ms': number
  workers: number
  'tls-cert'?: string
  'tls-key'?: string
  'peer-ca-file'?: string
  'fetch-stall-timeout-ms'?: number
  'max-connections'?: number
  'max-response-bytes'?: number
  'send-timeout-ms'?: number
  'headers-timeout-ms'?: number
  'request-timeout-ms'?: number
  'keep-alive-timeout-ms'?: number
  'self-repair': boolean
  'peer-check-timeout-ms'?: number
  'peer-check-grace-ms'?: number
  'read-token'?: string
  preload?: Preload
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
    .option('node-id', { ...integerOption('node-id'), demandOption: true, describe: 'id of this node in cluster.json' })
    .option('data-dir', { type: 'string', demandOption: true, describe: 'directory holding one sub-directory per store' })
    .option('admin-token', {
      type: 'string',
      describe:
        'bearer token of the admin API (prefer env ROSTORE_ADMIN_TOKEN or --admin-token-file: command lines are visible to other users)',
    })
    .option('admin-token-file', { type: 'string', describe: 'file whose first line is the admin token' })
    .option('keep-versions', {
      ...integerOption('keep-versions'),
      default: DEFAULT_KEEP_VERSIONS,
      describe: 'backups kept besides the live version',
    })
    .option('bind', { type: 'string', describe: "address to listen on (default: the node's host in cluster.json)" })
    .option('port', { ...integerOption('port'), describe: "port to listen on, 0 for any (default: the node's port in cluster.json)" })
    .option('fetch-max-bytes-per-sec', { ...integerOption('fetch-max-bytes-per-sec'), describe: 'node-wide rate limit of fetches' })
    .option('stream-max-bytes-per-sec', {
      ...integerOption('stream-max-bytes-per-sec'),
      describe: 'node-wide rate limit of dump streams (default 10000000; 0: unlimited)',
    })
    .option('allowed-source', {
      type: 'string',
      array: true,
      describe: 'fetch sources and install paths must lie under one of these paths or URL prefixes (repeatable)',
    })
    .option('fetch-stall-timeout-ms', {
      ...integerOption('fetch-stall-timeout-ms'),
      describe: 'a fetch download silent this long is cut and retried (default 30000)',
    })
    .option('tls-cert', { type: 'string', describe: 'PEM certificate chain: serve HTTPS (reads and admin); needs --tls-key' })
    .option('tls-key', { type: 'string', describe: 'PEM private key of --tls-cert (SIGHUP reloads both)' })
    .option('peer-ca-file', {
      type: 'string',
      describe: "with --tls-cert: PEM CA(s) of the other nodes' certificates, for the startup peer check (default: the system's CAs)",
    })
    .option('access-log', { type: 'boolean', default: false, describe: 'log one line per request' })
    .option('drain-timeout-ms', {
      ...integerOption('drain-timeout-ms'),
      default: 30_000,
      describe: 'on SIGTERM, wait this long for in-flight requests',
    })
    .option('version-drain-ms', {
      ...integerOption('version-drain-ms'),
      default: 30_000,
      describe: 'after a swap, cut requests still reading the old version after this long, so retention can delete it',
    })
    .option('workers', {
      ...integerOption('workers'),
      default: availableParallelism(),
      defaultDescription: 'the number of cores',
      describe: 'serving processes sharing the port and the mapped files (1: one process does everything)',
    })
    .option('max-connections', {
      ...integerOption('max-connections'),
      describe: 'connections served at once; more are closed on arrival (default 2048)',
    })
    .option('max-response-bytes', {
      ...integerOption('max-response-bytes'),
      describe: 'largest read response body; multi-gets stop there and clients ask again (default 67108864)',
    })
    .option('send-timeout-ms', {
      ...integerOption('send-timeout-ms'),
      describe: 'cut a read response that sends nothing for this long (default 30000)',
    })
    .option('headers-timeout-ms', {
      ...integerOption('headers-timeout-ms'),
      describe: 'close a connection that has not sent its request headers within this long (default 10000)',
    })
    .option('request-timeout-ms', {
      ...integerOption('request-timeout-ms'),
      describe: 'close a connection that has not sent its whole request within this long (default 30000)',
    })
    .option('keep-alive-timeout-ms', {
      ...integerOption('keep-alive-timeout-ms'),
      describe: 'close an idle keep-alive connection after this long (default 5000)',
    })
    .option('self-repair', {
      type: 'boolean',
      default: true,
      describe: 'fetch a version this node missed (it was down during a push) from the push source; --no-self-repair waits for a push',
    })
    .option('peer-check-timeout-ms', {
      ...integerOption('peer-check-timeout-ms'),
      describe: "at startup, wait this long for each peer's push records (default 3000)",
    })
    .option('peer-check-grace-ms', {
      ...integerOption('peer-check-grace-ms'),
      describe: 'with no peer answering at startup, refuse reads of the stores this long, then serve them (default 30000)',
    })
    .option('drain-timeout-ms', { type: 'number', default: 30_000, describe: 'on SIGTERM, wait this long for in-flight requests' })
    .option('read-token', {
      type: 'string',
      describe: 'token reads need: HTTP bearer, RESP AUTH (prefer env ROSTORE_READ_TOKEN or --read-token-file); off by default',
    })
    .option('read-token-file', { type: 'string', describe: 'file whose first line is the read token' })
    .option('resp-port', {
      ...integerOption('resp-port'),
      describe:
        "serve reads over RESP (the Redis protocol) on this port, 0 for any (default: the node's respPort in cluster.json, else none)",
    })
    .option('preload', {
      type: 'string',
      choices: PRELOADS,
      default: 'index',
      describe: 'what a version makes resident before it serves: its index, all its files, or only what the checks read (docs/SERVING.md)',
    })
    .option('resp-default-store', { type: 'string', describe: 'RESP keys are bare keys of this store instead of <store>:<key>' })
    .option('resp-max-clients', { ...integerOption('resp-max-clients'), describe: 'open RESP connections at most (default 10000)' })
    .option('resp-idle-timeout-ms', {
      ...integerOption('resp-idle-timeout-ms'),
      describe: 'close RESP connections idle this long, 0 for never (default 300000)',
    })
    .check((a) => {
      if (!Number.isSafeInteger(a['node-id']) || a['node-id'] < 0)
        throw new StoreError('RO_BAD_OPTION', `--node-id must be a non-negative integer, got ${a['node-id']}`)
      if (!Number.isSafeInteger(a['keep-versions']) || a['keep-versions'] < 0)
        throw new StoreError('RO_BAD_OPTION', `--keep-versions must be a non-negative integer, got ${a['keep-versions']}`)
      if (!Number.isSafeInteger(a.workers) || a.workers < 1 || a.workers > 256)
        throw new StoreError('RO_BAD_OPTION', `--workers must be an integer from 1 to 256, got ${a.workers}`)
      if (!Number.isSafeInteger(a['version-drain-ms']) || a['version-drain-ms'] < 0)
        throw new StoreError('RO_BAD_OPTION', `--version-drain-ms must be a non-negative integer, got ${a['version-drain-ms']}`)
      if (a.port !== undefined && (!Number.isSafeInteger(a.port) || a.port < 0 || a.port > 65535))
        throw new StoreError('RO_BAD_OPTION', `--port must be 0..65535, got ${a.port}`)
      if (a['admin-token'] !== undefined && a['admin-token-file'] !== undefined) {
        throw new StoreError('RO_BAD_OPTION', 'give --admin-token or --admin-token-file, not both')
      }
      if ((a['tls-cert'] === undefined) !== (a['tls-key'] === undefined))
        throw new StoreError('RO_BAD_OPTION', 'give both --tls-cert and --tls-key, or neither')
      const stall = a['fetch-stall-timeout-ms']
      if (stall !== undefined && (!Number.isSafeInteger(stall) || stall < 1))
        throw new StoreError('RO_BAD_OPTION', `--fetch-stall-timeout-ms must be a positive integer, got ${a['fetch-stall-timeout-ms']}`)
      if (a['read-token'] !== undefined && a['read-token-file'] !== undefined)
        throw new StoreError('RO_BAD_OPTION', 'give --read-token or --read-token-file, not both')
      if (a['resp-port'] !== undefined && (!Number.isSafeInteger(a['resp-port']) || a['resp-port'] < 0 || a['resp-port'] > 65535))
        throw new StoreError('RO_BAD_OPTION', `--resp-port must be 0..65535, got ${a['resp-port']}`)
      if (a['resp-max-clients'] !== undefined && (!Number.isSafeInteger(a['resp-max-clients']) || a['resp-max-clients'] < 1))
        throw new StoreError('RO_BAD_OPTION', `--resp-max-clients must be a positive integer, got ${a['resp-max-clients']}`)
      if (a['resp-idle-timeout-ms'] !== undefined && (!Number.isSafeInteger(a['resp-idle-timeout-ms']) || a['resp-idle-timeout-ms'] < 0))
        throw new StoreError('RO_BAD_OPTION', `--resp-idle-timeout-ms must be a non-negative integer, got ${a['resp-idle-timeout-ms']}`)
      for (const name of ['headers-timeout-ms', 'request-timeout-ms', 'keep-alive-timeout-ms'] as const) {
        const v = a[name]
        if (v !== undefined && (!Number.isSafeInteger(v) || v < 1))
          throw new StoreError('RO_BAD_OPTION', `--${name} must be a positive integer, got ${v}`)
      }
      // node:http refuses a headers timeout longer than the request timeout.
      const headersMs = a['headers-timeout-ms'] ?? 10_000
      const requestMs = a['request-timeout-ms'] ?? 30_000
      if (headersMs > requestMs)
        throw new StoreError('RO_BAD_OPTION', `--headers-timeout-ms (${headersMs}) must not exceed --request-timeout-ms (${requestMs})`)
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
    const certFile = argv['tls-cert']
    const keyFile = argv['tls-key']
    const tls = certFile !== undefined && keyFile !== undefined ? await loadTlsFiles(certFile, keyFile) : undefined
    node = await startNode({
      clusterPath: argv.cluster,
      nodeId: argv['node-id'],
      dataDir: argv['data-dir'],
      adminToken: adminToken(argv),
      readToken: readToken(argv),
      preload: argv.preload,
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
      streamMaxBytesPerSec: argv['stream-max-bytes-per-sec'],
      allowedSources: argv['allowed-source'],
      accessLog: argv['access-log'],
      drainTimeoutMs: argv['drain-timeout-ms'],
      versionDrainMs: argv['version-drain-ms'],
      workers: argv.workers,
      fetchStallTimeoutMs: argv['fetch-stall-timeout-ms'],
      tls,
      ...(argv['peer-ca-file'] === undefined ? {} : { peerTls: { ca: await readCaFile(argv['peer-ca-file']) } }),
      maxConnections: argv['max-connections'],
      maxResponseBytes: argv['max-response-bytes'],
      sendTimeoutMs: argv['send-timeout-ms'],
      timeouts: {
        headersMs: argv['headers-timeout-ms'],
        requestMs: argv['request-timeout-ms'],
        keepAliveMs: argv['keep-alive-timeout-ms'],
      },
      selfRepair: argv['self-repair'],
      peerCheckTimeoutMs: argv['peer-check-timeout-ms'],
      peerCheckGraceMs: argv['peer-check-grace-ms'],
      log,
    })
    const running = node
    if (certFile !== undefined && keyFile !== undefined) {
      // Certificate rotation: new connections get the new files; a bad file keeps the old ones.
      process.on('SIGHUP', () => {
        running.reloadTls(certFile, keyFile).then(
          () => log.info('tls-reloaded', { cert: certFile }),
          (err: unknown) => log.error('tls-reload-failed', { error: errorMessage(err) }),
        )
      })
    }
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
