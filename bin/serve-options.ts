import { JOB_PRIORITIES } from '../common/job-priority'
import { availableParallelism } from 'node:os'
import type { Argv } from 'yargs'
import { PRELOADS } from '../formats/store/read/store-reader-api'
import { DEFAULT_KEEP_VERSIONS } from '../swapper/store-versions'
import { HTTP_READ_PATHS } from '../server/node-options'
import { integerOption } from './integer-option'

/**
 * What a `serve` setting holds, on the command line and in `--config` (serve-config.ts):
 * `path` and `sources` values in the file are resolved against the file's directory
 * (`sources`: only entries that are not URLs).
 */
export type ServeOptionKind = 'string' | 'path' | 'integer' | 'boolean' | 'sources'

export interface ServeOptionSpec {
  /** The flag's name without `--`; also its key in the config file. */
  readonly name: string
  readonly kind: ServeOptionKind
  readonly describe: string
  /** Applied after the file: command line, then file, then this. */
  readonly default?: string | number | boolean | (() => number)
  readonly defaultDescription?: string
  readonly choices?: readonly string[]
  /** Required once the command line and the file are merged. */
  readonly required?: boolean
  /** Two ways to give one setting (a token or its file): a flag for either hides both in the file. */
  readonly sameSettingAs?: string
}

/**
 * Every `rostore serve` setting, in one table: the flags are made from it and the config
 * file is checked against it, so no flag exists that the file cannot set.
 */
export const SERVE_OPTIONS: readonly ServeOptionSpec[] = [
  { name: 'cluster', kind: 'path', required: true, describe: "cluster.json (this node's host and port come from it)" },
  { name: 'node-id', kind: 'integer', required: true, describe: 'id of this node in cluster.json' },
  { name: 'data-dir', kind: 'path', required: true, describe: 'directory holding one sub-directory per store' },
  {
    name: 'admin-token',
    kind: 'string',
    describe:
      'bearer token of the admin API (prefer env ROSTORE_ADMIN_TOKEN or --admin-token-file: command lines are visible to other users)',
  },
  { name: 'admin-token-file', kind: 'path', sameSettingAs: 'admin-token', describe: 'file whose first line is the admin token' },
  { name: 'keep-versions', kind: 'integer', default: DEFAULT_KEEP_VERSIONS, describe: 'backups kept besides the live version' },
  { name: 'bind', kind: 'string', describe: "address to listen on (default: the node's host in cluster.json)" },
  { name: 'port', kind: 'integer', describe: "port to listen on, 0 for any (default: the node's port in cluster.json)" },
  { name: 'fetch-max-bytes-per-sec', kind: 'integer', describe: 'node-wide rate limit of fetches' },
  {
    name: 'stream-max-bytes-per-sec',
    kind: 'integer',
    describe: 'node-wide rate limit of dump streams (default 10000000; 0: unlimited)',
  },
  {
    name: 'allowed-source',
    kind: 'sources',
    describe: 'fetch sources and install paths must lie under one of these paths or URL prefixes (repeatable)',
  },
  { name: 'fetch-stall-timeout-ms', kind: 'integer', describe: 'a fetch download silent this long is cut and retried (default 30000)' },
  { name: 'tls-cert', kind: 'path', describe: 'PEM certificate chain: serve HTTPS (reads and admin); needs --tls-key' },
  { name: 'tls-key', kind: 'path', describe: 'PEM private key of --tls-cert (SIGHUP reloads both)' },
  {
    name: 'peer-ca-file',
    kind: 'path',
    describe: "with --tls-cert: PEM CA(s) of the other nodes' certificates, for the startup peer check (default: the system's CAs)",
  },
  { name: 'access-log', kind: 'boolean', default: false, describe: 'log one line per request' },
  { name: 'drain-timeout-ms', kind: 'integer', default: 30_000, describe: 'on SIGTERM, wait this long for in-flight requests' },
  {
    name: 'version-drain-ms',
    kind: 'integer',
    default: 30_000,
    describe: 'after a swap, cut requests still reading the old version after this long, so retention can delete it',
  },
  {
    name: 'workers',
    kind: 'integer',
    default: () => availableParallelism(),
    defaultDescription: 'the number of cores',
    describe: 'serving processes sharing the port and the mapped files (1: one process does everything)',
  },
  { name: 'max-connections', kind: 'integer', describe: 'connections served at once; more are closed on arrival (default 2048)' },
  {
    name: 'max-response-bytes',
    kind: 'integer',
    describe: 'largest read response body; multi-gets stop there and clients ask again (default 67108864)',
  },
  {
    name: 'max-buffered-request-bytes',
    kind: 'integer',
    describe:
      'request bytes each serving process holds at once for unfinished requests (multi-get bodies, RESP commands); past it they get RO_BUSY (default 67108864)',
  },
  {
    name: 'headers-timeout-ms',
    kind: 'integer',
    describe: 'close a connection that has not sent its request headers within this long (default 10000)',
  },
  {
    name: 'request-timeout-ms',
    kind: 'integer',
    describe: 'close a connection that has not sent its whole request within this long (default 30000)',
  },
  { name: 'keep-alive-timeout-ms', kind: 'integer', describe: 'close an idle keep-alive connection after this long (default 5000)' },
  { name: 'send-timeout-ms', kind: 'integer', describe: 'cut a read response that sends nothing for this long (default 30000)' },
  {
    name: 'self-repair',
    kind: 'boolean',
    default: true,
    describe: 'fetch a version this node missed (it was down during a push) from the push source; --no-self-repair waits for a push',
  },
  { name: 'peer-check-timeout-ms', kind: 'integer', describe: "at startup, wait this long for each peer's push records (default 3000)" },
  {
    name: 'peer-check-grace-ms',
    kind: 'integer',
    describe: 'with no peer answering at startup, refuse reads of the stores this long, then serve them (default 30000)',
  },
  {
    name: 'read-token',
    kind: 'string',
    describe: 'token reads need: HTTP bearer, RESP AUTH (prefer env ROSTORE_READ_TOKEN or --read-token-file); off by default',
  },
  { name: 'read-token-file', kind: 'path', sameSettingAs: 'read-token', describe: 'file whose first line is the read token' },
  {
    name: 'metrics-token',
    kind: 'string',
    describe:
      'bearer token /metrics needs (the admin token works too; prefer env ROSTORE_METRICS_TOKEN or --metrics-token-file); /metrics is open by default',
  },
  { name: 'metrics-token-file', kind: 'path', sameSettingAs: 'metrics-token', describe: 'file whose first line is the metrics token' },
  {
    name: 'resp-port',
    kind: 'integer',
    describe:
      "serve reads over RESP (the Redis protocol) on this port, 0 for any (default: the node's respPort in cluster.json, else none)",
  },
  {
    name: 'preload',
    kind: 'string',
    choices: PRELOADS,
    default: 'index',
    describe: 'what a version makes resident before it serves: its index, all its files, or only what the checks read (docs/SERVING.md)',
  },
  {
    name: 'http-read-path',
    kind: 'string',
    choices: HTTP_READ_PATHS,
    default: 'fast',
    describe:
      'how HTTP key reads are served: fast (GETs of keys and multi-gets parsed from the bytes, everything else handed to node:http) or node (node:http for every request); docs/SERVING.md',
  },
  {
    name: 'job-priority',
    kind: 'string',
    choices: JOB_PRIORITIES,
    default: 'low',
    describe:
      "the priority of the node's job threads (verify, patch rebuilds) beside its reads: low (nice 10 and the idle I/O class) or normal; docs/SERVING.md",
  },
  { name: 'resp-default-store', kind: 'string', describe: 'RESP keys are bare keys of this store instead of <store>:<key>' },
  { name: 'resp-max-clients', kind: 'integer', describe: 'open RESP connections at most (default 10000)' },
  { name: 'resp-idle-timeout-ms', kind: 'integer', describe: 'close RESP connections idle this long, 0 for never (default 300000)' },
]

/**
 * Registers every serve flag with yargs. No yargs defaults: a flag yargs filled in could
 * not be told from one the user typed, and typed flags win over the config file; defaults
 * are applied after the merge and shown in --help through `defaultDescription`.
 */
export function serveFlags<T>(y: Argv<T>): Argv<T> {
  let out = y.option('config', {
    type: 'string',
    describe: 'JSON file of these settings, keyed by flag name ("data-dir": "/var/lib/rostore"); flags given here win (docs/DEPLOY.md)',
  })
  for (const o of SERVE_OPTIONS) {
    const shown =
      o.defaultDescription ?? (o.default === undefined || typeof o.default === 'function' ? undefined : JSON.stringify(o.default))
    const describe = o.required ? `${o.describe} (required: here or in --config)` : o.describe
    const common = { describe, ...(shown === undefined ? {} : { defaultDescription: shown }) }
    if (o.kind === 'integer') out = out.option(o.name, { ...integerOption(o.name), ...common })
    else if (o.kind === 'boolean') out = out.option(o.name, { type: 'boolean', ...common })
    else if (o.kind === 'sources') out = out.option(o.name, { type: 'string', array: true, ...common })
    else out = out.option(o.name, { type: 'string', ...(o.choices ? { choices: [...o.choices] } : {}), ...common })
  }
  return out
}
