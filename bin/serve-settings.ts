import type { JobPriority } from '../common/job-priority'
import { readFile } from 'node:fs/promises'
import { errorMessage, StoreError } from '../common/errors'
import type { Preload } from '../formats/store/read/store-reader-api'
import type { HttpReadPath, NodeOptions } from '../server/node-options'
import { loadTlsFiles } from '../server/tls'
import { readCaFile } from './cluster-options'
import { mergeServeSettings, readServeConfig, type ServeValue } from './serve-config'
import { SERVE_OPTIONS } from './serve-options'

/** `rostore serve`'s settings once the command line, the --config file and the defaults are merged. */
export interface ServeArgs {
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
  'max-buffered-request-bytes'?: number
  'headers-timeout-ms'?: number
  'request-timeout-ms'?: number
  'keep-alive-timeout-ms'?: number
  'send-timeout-ms'?: number
  'self-repair': boolean
  'peer-check-timeout-ms'?: number
  'peer-check-grace-ms'?: number
  'read-token'?: string
  preload?: Preload
  'http-read-path'?: HttpReadPath
  'job-priority'?: JobPriority
  'read-token-file'?: string
  'metrics-token'?: string
  'metrics-token-file'?: string
  'resp-port'?: number
  'resp-default-store'?: string
  'resp-max-clients'?: number
  'resp-idle-timeout-ms'?: number
}

/** The command line over the --config file over the defaults, checked; RO_BAD_OPTION. */
export async function serveArgs(argv: Readonly<Record<string, unknown>>): Promise<ServeArgs> {
  const cli: Record<string, ServeValue | undefined> = {}
  for (const o of SERVE_OPTIONS) cli[o.name] = argv[o.name] as ServeValue | undefined
  if (Array.isArray(argv.config)) throw new StoreError('RO_BAD_OPTION', `--config was given ${argv.config.length} times; give it once`)
  const file = typeof argv.config === 'string' ? await readServeConfig(argv.config) : {}
  const a = mergeServeSettings(cli, file) as unknown as ServeArgs
  checkServeArgs(a)
  return a
}

function checkServeArgs(a: ServeArgs): void {
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
  if (!Number.isSafeInteger(a['node-id']) || a['node-id'] < 0)
    throw new StoreError('RO_BAD_OPTION', `--node-id must be a non-negative integer, got ${a['node-id']}`)
  if (!Number.isSafeInteger(a['keep-versions']) || a['keep-versions'] < 0)
    throw new StoreError('RO_BAD_OPTION', `--keep-versions must be a non-negative integer, got ${a['keep-versions']}`)
  if (!Number.isSafeInteger(a.workers) || a.workers < 1 || a.workers > 256)
    throw new StoreError('RO_BAD_OPTION', `--workers must be an integer from 1 to 256, got ${a.workers}`)
  if (!Number.isSafeInteger(a['version-drain-ms']) || a['version-drain-ms'] < 0)
    throw new StoreError('RO_BAD_OPTION', `--version-drain-ms must be a non-negative integer, got ${a['version-drain-ms']}`)
  if (!Number.isSafeInteger(a['drain-timeout-ms']) || a['drain-timeout-ms'] < 0)
    throw new StoreError('RO_BAD_OPTION', `--drain-timeout-ms must be a non-negative integer, got ${a['drain-timeout-ms']}`)
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
  if (a['metrics-token'] !== undefined && a['metrics-token-file'] !== undefined)
    throw new StoreError('RO_BAD_OPTION', 'give --metrics-token or --metrics-token-file, not both')
  if (a['resp-port'] !== undefined && (!Number.isSafeInteger(a['resp-port']) || a['resp-port'] < 0 || a['resp-port'] > 65535))
    throw new StoreError('RO_BAD_OPTION', `--resp-port must be 0..65535, got ${a['resp-port']}`)
  if (a['resp-max-clients'] !== undefined && (!Number.isSafeInteger(a['resp-max-clients']) || a['resp-max-clients'] < 1))
    throw new StoreError('RO_BAD_OPTION', `--resp-max-clients must be a positive integer, got ${a['resp-max-clients']}`)
  if (a['resp-idle-timeout-ms'] !== undefined && (!Number.isSafeInteger(a['resp-idle-timeout-ms']) || a['resp-idle-timeout-ms'] < 0))
    throw new StoreError('RO_BAD_OPTION', `--resp-idle-timeout-ms must be a non-negative integer, got ${a['resp-idle-timeout-ms']}`)
}

/** A token: its file's first line, else the flag, else the environment variable. */
async function token(value: string | undefined, file: string | undefined, env: string): Promise<string | undefined> {
  if (file !== undefined) {
    let text: string
    try {
      text = await readFile(file, 'utf8')
    } catch (err) {
      throw new StoreError('RO_BAD_OPTION', `cannot read the token file ${file}: ${errorMessage(err)}`, { cause: err })
    }
    return text.split(/\r?\n/)[0]?.trim() || undefined
  }
  return value ?? (process.env[env] || undefined)
}

/** What `startNode` gets from the settings (files read: tokens, TLS, peer CA); the logger is the caller's. */
export async function nodeOptionsOf(argv: ServeArgs): Promise<Omit<NodeOptions, 'log'>> {
  const certFile = argv['tls-cert']
  const keyFile = argv['tls-key']
  const tls = certFile !== undefined && keyFile !== undefined ? await loadTlsFiles(certFile, keyFile) : undefined
  return {
    clusterPath: argv.cluster,
    nodeId: argv['node-id'],
    dataDir: argv['data-dir'],
    adminToken: await token(argv['admin-token'], argv['admin-token-file'], 'ROSTORE_ADMIN_TOKEN'),
    readToken: await token(argv['read-token'], argv['read-token-file'], 'ROSTORE_READ_TOKEN'),
    metricsToken: await token(argv['metrics-token'], argv['metrics-token-file'], 'ROSTORE_METRICS_TOKEN'),
    preload: argv.preload,
    httpReadPath: argv['http-read-path'],
    jobPriority: argv['job-priority'],
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
    maxBufferedRequestBytes: argv['max-buffered-request-bytes'],
    sendTimeoutMs: argv['send-timeout-ms'],
    timeouts: {
      headersMs: argv['headers-timeout-ms'],
      requestMs: argv['request-timeout-ms'],
      keepAliveMs: argv['keep-alive-timeout-ms'],
    },
    selfRepair: argv['self-repair'],
    peerCheckTimeoutMs: argv['peer-check-timeout-ms'],
    peerCheckGraceMs: argv['peer-check-grace-ms'],
  }
}
