import { JOB_PRIORITIES, type JobPriority } from '../common/job-priority'
import { StoreError } from '../common/errors'
import { loadCluster, type Cluster, type NodeTls } from '../cluster/cluster'
import type { AddressBook } from '../cluster/address-book'
import { PRELOADS, type Preload } from '../formats/store/read/store-reader-api'
import type { OpenReader } from '../swapper/open-version'
import { DEFAULT_KEEP_VERSIONS, type VerifyDir } from '../swapper/store-versions'
import { checkToken } from './auth'
import { openAddressBook } from './peers/learned-nodes'
import type { Logger } from './log'
import { readLimits, type ReadLimits } from './http/read-limits'
import { normalizeRespOptions, type RespServerOptions } from './resp/resp-context'
import type { NodeTlsOptions } from './tls'

const DEFAULT_MAX_CONNECTIONS = 2048

export interface NodeTimeouts {
  /** Time to receive the request headers; slow-loris connections die after it. Default 10 s. */
  readonly headersMs?: number
  /** Time to receive a whole request (headers and body). Default 30 s. */
  readonly requestMs?: number
  /** Idle keep-alive connections are closed after this. Default 5 s. */
  readonly keepAliveMs?: number
  /** How often the server checks the two timeouts above. Default 1 s. */
  readonly checkIntervalMs?: number
}

export interface NodeOptions {
  /** cluster.json path; or pass `cluster` directly. */
  readonly clusterPath?: string
  readonly cluster?: Cluster
  readonly nodeId: number
  readonly dataDir: string
  /** Admin bearer token; without one every admin route answers 403. */
  readonly adminToken?: string
  /** Read token: HTTP reads need it as a bearer token, RESP connections with AUTH. Off when unset. */
  readonly readToken?: string
  /** /metrics needs this bearer token (or the admin token). Unset: /metrics is open. */
  readonly metricsToken?: string
  /**
   * The RESP (Redis protocol) listener, on `bind` like HTTP, in every serving loop (each
   * worker of a multi-process node listens on the shared port). It starts when `resp.port`
   * is given (0: any free port) or cluster.json has a `respPort` for this node. With `tls`
   * it speaks TLS too, with the same certificate.
   */
  readonly resp?: RespNodeOptions
  /** Backups kept besides the live version (default 2). */
  readonly keepVersions?: number
  /** Host to listen on; default the node's host in cluster.json. */
  readonly bind?: string
  /** Port to listen on (0: any free port); default the node's port in cluster.json. */
  readonly port?: number
  /**
   * Serving event loops. 1 (the default of this API): one process does everything. N > 1:
   * a supervisor process keeps the versions, jobs and admin API, and N worker processes
   * share the port and the memory-mapped files and serve reads (docs/SERVING.md).
   */
  readonly workers?: number
  /** Node-wide fetch rate limit in bytes per second. */
  readonly fetchMaxBytesPerSec?: number
  /** Node-wide rate limit of the streaming (dump) routes in bytes per second; 0: unlimited. Default 10 MB/s. */
  readonly streamMaxBytesPerSec?: number
  /** Sources fetch and install may read (prefixes of paths and URLs); default any. docs/API.md "Allowed sources". */
  readonly allowedSources?: readonly string[]
  /** A fetch download with no byte for this long is cut and retried. Default 30 s. */
  readonly fetchStallTimeoutMs?: number
  /** Serve HTTPS (reads and admin) with this certificate; see server/tls.ts. */
  readonly tls?: NodeTlsOptions
  /** One log line per request. Default false. */
  readonly accessLog?: boolean
  readonly log?: Logger
  readonly timeouts?: NodeTimeouts
  /** Let a graceful close wait this long for in-flight requests before cutting them. Default 30 s. */
  readonly drainTimeoutMs?: number
  /**
   * After a swap, requests still reading the replaced version this long are cut so its
   * files can be deleted by retention. Default 30 s.
   */
  readonly versionDrainMs?: number
  /** Connections served at once per serving process; more are closed as they arrive. Default 2048. */
  readonly maxConnections?: number
  /** Largest read response body (single get, multi-get); see read-limits.ts. Default 64 MiB. */
  readonly maxResponseBytes?: number
  /** A read response that sends nothing for this long (the client stopped reading) is cut. Default 30 s. */
  readonly sendTimeoutMs?: number
  /** Request bytes held at once per serving process for requests not whole yet (read-limits.ts). Default 64 MiB. */
  readonly maxBufferedRequestBytes?: number
  /**
   * A node that missed a push (it was down) fetches the version from the push's source and
   * swaps to it by itself; without, it refuses reads of that store until a push. Default true.
   */
  readonly selfRepair?: boolean
  /** How the startup check reaches the peers when the node serves TLS: the CA of their certificates. */
  readonly peerTls?: NodeTls
  /** How long the startup check waits for each peer's answer. Default 3000 ms. */
  readonly peerCheckTimeoutMs?: number
  /** With no peer answering, refuse reads of the stores found at startup this long, then serve them. Default 30 s. */
  readonly peerCheckGraceMs?: number
  /** prom-client's default process metrics (RSS, heap, event loop). Default true. */
  readonly defaultMetrics?: boolean
  /**
   * What a version's reader makes resident before it serves (formats/store: 'index', the
   * default, 'all' or 'none'); the same in every serving process.
   */
  readonly preload?: Preload
  /**
   * How HTTP key reads are served: 'fast' (the default), GETs of keys and multi-gets parsed
   * from the connection's bytes and everything else handed to node:http
   * (server/http/fast-host.ts), or 'node', node:http for every request. HTTPS is always 'node'.
   */
  readonly httpReadPath?: HttpReadPath
  /**
   * The priority of the node's jobs beside its reads (common/job-priority.ts): 'low' (the
   * default) or 'normal'.
   */
  readonly jobPriority?: JobPriority
  /** Test seams (single-process nodes only). */
  readonly openReader?: OpenReader
  readonly verify?: VerifyDir
}

export type RespNodeOptions = Omit<RespServerOptions, 'host' | 'port' | 'tls' | 'peerTls'> & { readonly port?: number }

/** What every kind of node derives from its options before it starts anything. */
export interface NodeSetup {
  /** The cluster file plus the nodes learned since (`cluster-nodes.json` in the data directory). */
  readonly cluster: AddressBook
  readonly host: string
  readonly port: number
  readonly keepVersions: number
  readonly workers: number
  readonly readLimits: ReadLimits
  readonly maxConnections: number
  /** The RESP listener's options (host and port resolved), or undefined when the node runs none. */
  readonly resp: RespServerOptions | undefined
  /** The streaming routes' node-wide limit in bytes per second; 0: unlimited. */
  readonly streamMaxBytesPerSec: number
  readonly preload: Preload
  readonly httpReadPath: HttpReadPath
  readonly jobPriority: JobPriority
}

/** The HTTP read paths a node can serve with (`--http-read-path`). */
export const HTTP_READ_PATHS = ['node', 'fast'] as const
export type HttpReadPath = (typeof HTTP_READ_PATHS)[number]

/** Default of `--stream-max-bytes-per-sec`, Voldemort's `stream.read.byte.per.sec`. */
export const DEFAULT_STREAM_MAX_BYTES_PER_SEC = 10_000_000

/** Loads the cluster and checks the options a user gave; RO_BAD_OPTION / RO_BAD_CLUSTER. */
export async function resolveNodeSetup(opts: NodeOptions): Promise<NodeSetup> {
  const file = opts.cluster ?? (opts.clusterPath ? await loadCluster(opts.clusterPath) : undefined)
  if (!file) throw new StoreError('RO_BAD_OPTION', 'a cluster (cluster.json) is required')
  const cluster = await openAddressBook(file, opts.dataDir)
  const me = cluster.nodes.find((n) => n.id === opts.nodeId)
  if (!me) throw new StoreError('RO_BAD_CLUSTER', `node ${opts.nodeId} is not in cluster ${cluster.name}`)
  const keepVersions = opts.keepVersions ?? DEFAULT_KEEP_VERSIONS
  if (!Number.isSafeInteger(keepVersions) || keepVersions < 0) {
    throw new StoreError('RO_BAD_OPTION', `--keep-versions must be a non-negative integer, got ${keepVersions}`)
  }
  const workers = opts.workers ?? 1
  if (!Number.isSafeInteger(workers) || workers < 1 || workers > 256) {
    throw new StoreError('RO_BAD_OPTION', `--workers must be an integer from 1 to 256, got ${workers}`)
  }
  const maxConnections = opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS
  if (!Number.isSafeInteger(maxConnections) || maxConnections < 1) {
    throw new StoreError('RO_BAD_OPTION', `--max-connections must be a positive integer, got ${maxConnections}`)
  }
  const streamMaxBytesPerSec = opts.streamMaxBytesPerSec ?? DEFAULT_STREAM_MAX_BYTES_PER_SEC
  if (!Number.isFinite(streamMaxBytesPerSec) || streamMaxBytesPerSec < 0) {
    throw new StoreError(
      'RO_BAD_OPTION',
      `--stream-max-bytes-per-sec must be 0 (unlimited) or a positive number, got ${streamMaxBytesPerSec}`,
    )
  }
  const preload = opts.preload ?? 'index'
  if (!PRELOADS.includes(preload)) {
    throw new StoreError('RO_BAD_OPTION', `--preload must be one of ${PRELOADS.join(', ')}, got ${String(preload)}`)
  }
  const httpReadPath = opts.httpReadPath ?? 'fast'
  if (!HTTP_READ_PATHS.includes(httpReadPath)) {
    throw new StoreError('RO_BAD_OPTION', `--http-read-path must be one of ${HTTP_READ_PATHS.join(', ')}, got ${String(httpReadPath)}`)
  }
  const jobPriority = opts.jobPriority ?? 'low'
  if (!JOB_PRIORITIES.includes(jobPriority)) {
    throw new StoreError('RO_BAD_OPTION', `--job-priority must be one of ${JOB_PRIORITIES.join(', ')}, got ${String(jobPriority)}`)
  }
  const limits = readLimits({
    maxResponseBytes: opts.maxResponseBytes,
    sendTimeoutMs: opts.sendTimeoutMs,
    maxBufferedRequestBytes: opts.maxBufferedRequestBytes,
  })
  const host = opts.bind ?? me.host
  const respPort = opts.resp?.port ?? me.respPort
  // A node that serves HTTPS serves RESP over TLS too, with the same certificate.
  const resp = respPort === undefined ? undefined : { ...opts.resp, host, port: respPort, tls: opts.tls, peerTls: opts.peerTls }
  // Checked here, before anything starts (and before a supervisor forks workers that would fail).
  if (resp) normalizeRespOptions(resp)
  if (opts.readToken !== undefined && opts.readToken !== '') checkToken('the read token', opts.readToken)
  if (opts.metricsToken !== undefined && opts.metricsToken !== '') checkToken('the metrics token', opts.metricsToken)
  return {
    cluster,
    host,
    port: opts.port ?? me.port,
    keepVersions,
    workers,
    readLimits: limits,
    maxConnections,
    resp,
    streamMaxBytesPerSec,
    preload,
    httpReadPath,
    jobPriority,
  }
}
