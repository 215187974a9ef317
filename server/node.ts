import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { errorMessage, StoreError } from '../common/errors'
import { loadCluster, type Cluster } from '../cluster/cluster'
import { DataDir } from '../swapper/data-dir'
import type { OpenReader, VerifyDir } from '../swapper/store-versions'
import { DEFAULT_KEEP_VERSIONS } from '../swapper/store-versions'
import { createRequestHandler } from './request-handler'
import { AdminAuth } from './auth'
import { createFetchRunner } from './fetch-route'
import { MAX_URL_BYTES } from './http-util'
import { Jobs } from './jobs'
import { PushLocks } from './push-lock'
import { createLogger, type Logger } from './log'
import { NodeMetrics } from './metrics'
import { PeerCheck } from './peer-check'
import { ReadFaults } from './read-faults'
import { readLimits } from './read-limits'

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
  /** Backups kept besides the live version (default 2). */
  readonly keepVersions?: number
  /** Host to listen on; default the node's host in cluster.json. */
  readonly bind?: string
  /** Port to listen on (0: any free port); default the node's port in cluster.json. */
  readonly port?: number
  /** Node-wide fetch rate limit in bytes per second. */
  readonly fetchMaxBytesPerSec?: number
  /** Fetch sources allowed (prefixes); default any. */
  readonly allowedSources?: readonly string[]
  /** One log line per request. Default false. */
  readonly accessLog?: boolean
  readonly log?: Logger
  readonly timeouts?: NodeTimeouts
  /** Let a graceful close wait this long for in-flight requests before cutting them. Default 30 s. */
  readonly drainTimeoutMs?: number
  /** Connections served at once; more are closed as they arrive. Default 2048. */
  readonly maxConnections?: number
  /** Largest read response body (single get, multi-get); see read-limits.ts. Default 64 MiB. */
  readonly maxResponseBytes?: number
  /** A read response that sends nothing for this long (the client stopped reading) is cut. Default 30 s. */
  readonly sendTimeoutMs?: number
  /**
   * A node that missed a push (it was down) fetches the version from the push's source and
   * swaps to it by itself; without, it refuses reads of that store until a push. Default true.
   */
  readonly selfRepair?: boolean
  /** How long the startup check waits for each peer's answer. Default 3000 ms. */
  readonly peerCheckTimeoutMs?: number
  /** With no peer answering, refuse reads of the stores found at startup this long, then serve them. Default 30 s. */
  readonly peerCheckGraceMs?: number
  /** prom-client's default process metrics (RSS, heap, event loop delay). Default true. */
  readonly defaultMetrics?: boolean
  /** Test seams. */
  readonly openReader?: OpenReader
  readonly verify?: VerifyDir
}

export interface RunningNode {
  readonly nodeId: number
  readonly host: string
  readonly port: number
  /** http://host:port (IPv6 hosts in brackets). */
  readonly url: string
  readonly server: Server
  readonly dataDir: DataDir
  readonly jobs: Jobs
  readonly metrics: NodeMetrics
  /**
   * Graceful stop: stop accepting, let in-flight requests finish (up to drainTimeoutMs),
   * cancel running jobs, close the readers. Resolves true when everything drained in
   * time. Idempotent.
   */
  close(): Promise<boolean>
}

/** Start a serving node: recover and open every store under dataDir, then listen. */
export async function startNode(opts: NodeOptions): Promise<RunningNode> {
  const log = opts.log ?? createLogger()
  const cluster = opts.cluster ?? (opts.clusterPath ? await loadCluster(opts.clusterPath) : undefined)
  if (!cluster) throw new StoreError('RO_BAD_OPTION', 'a cluster (cluster.json) is required')
  const me = cluster.nodes.find((n) => n.id === opts.nodeId)
  if (!me) throw new StoreError('RO_BAD_CLUSTER', `node ${opts.nodeId} is not in cluster ${cluster.name}`)
  const keepVersions = opts.keepVersions ?? DEFAULT_KEEP_VERSIONS
  if (!Number.isSafeInteger(keepVersions) || keepVersions < 0) {
    throw new StoreError('RO_BAD_OPTION', `--keep-versions must be a non-negative integer, got ${keepVersions}`)
  }
  const limits = readLimits({ maxResponseBytes: opts.maxResponseBytes, sendTimeoutMs: opts.sendTimeoutMs })
  const maxConnections = opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS
  if (!Number.isSafeInteger(maxConnections) || maxConnections < 1) {
    throw new StoreError('RO_BAD_OPTION', `--max-connections must be a positive integer, got ${maxConnections}`)
  }
  const auth = new AdminAuth(opts.adminToken)
  if (!auth.enabled) log.warn('admin-disabled', { reason: 'no admin token configured; admin routes answer 403' })
  else if ((opts.adminToken ?? '').length < 16) log.warn('admin-token-short', { reason: 'use at least 16 random characters' })

  let dataDir: DataDir | undefined = undefined
  const metrics = new NodeMetrics(() => dataDir, opts.defaultMetrics ?? true)
  dataDir = await DataDir.open({
    dir: opts.dataDir,
    nodeId: opts.nodeId,
    keepVersions,
    openReader: opts.openReader,
    verify: opts.verify,
    log,
    // A node of a cluster asks its peers whether it missed a push before it serves (peer-check.ts).
    holdForPeers: cluster.nodes.length > 1,
    hooks: {
      onSwap: (r) => metrics.onSwap(r),
      onVersionsDeleted: (store, versions) => metrics.versionsDeleted.inc({ store }, versions.length),
    },
  })
  const dd = dataDir
  const jobs = new Jobs({ log, onFinish: (j) => metrics.jobs.inc({ kind: j.kind, state: j.state }) })
  const fetch = createFetchRunner({
    nodeId: opts.nodeId,
    maxBytesPerSec: opts.fetchMaxBytesPerSec,
    allowedSources: opts.allowedSources,
    registry: metrics.registry,
  })
  const peers = new PeerCheck({
    nodeId: opts.nodeId,
    cluster,
    dataDir: dd,
    jobs,
    fetch,
    adminToken: opts.adminToken,
    log,
    timeoutMs: opts.peerCheckTimeoutMs,
    graceMs: opts.peerCheckGraceMs,
    selfRepair: opts.selfRepair,
  })

  const t = opts.timeouts ?? {}
  const server = createServer({
    maxHeaderSize: MAX_URL_BYTES + (64 << 10),
    headersTimeout: t.headersMs ?? 10_000,
    requestTimeout: t.requestMs ?? 30_000,
    keepAliveTimeout: t.keepAliveMs ?? 5_000,
    connectionsCheckingInterval: t.checkIntervalMs ?? 1_000,
  })
  server.headersTimeout = t.headersMs ?? 10_000
  server.requestTimeout = t.requestMs ?? 30_000
  server.keepAliveTimeout = t.keepAliveMs ?? 5_000
  // Each connection may hold a read window and a value (read-limits.ts): this bounds them.
  server.maxConnections = maxConnections
  server.on('drop', () => metrics.connectionsDropped.inc())

  let shuttingDown = false
  const host = opts.bind ?? me.host
  let bound = { host, port: opts.port ?? me.port }
  const handler = createRequestHandler({
    nodeId: opts.nodeId,
    cluster,
    stores: dd,
    dataDir: dd,
    auth,
    metrics,
    jobs,
    pushLocks: new PushLocks(),
    log,
    accessLog: opts.accessLog ?? false,
    startedAt: Date.now(),
    keepVersions,
    fetch,
    readLimits: limits,
    readFaults: new ReadFaults(),
    peers,
    shuttingDown: () => shuttingDown,
    address: () => bound,
  })
  server.on('request', handler)
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // Malformed requests, oversized headers, timeouts: answer when the socket still can.
    if (!socket.writable || (err.code === 'ECONNRESET' && !socket.readable)) {
      socket.destroy()
      return
    }
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
    socket.end(
      `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
    )
  })

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err)
    server.once('error', onError)
    server.listen({ host, port: bound.port }, () => {
      server.off('error', onError)
      resolve()
    })
  }).catch(async (err) => {
    await dd.close()
    throw new StoreError('RO_IO', `cannot listen on ${host}:${bound.port}: ${errorMessage(err)}`, { cause: err })
  })
  const addr = server.address() as AddressInfo
  bound = { host: addr.address, port: addr.port }
  // Listening already (peers asking this node get answers), serving stores only once decided.
  await peers.start()
  const url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`
  log.info('listening', {
    nodeId: opts.nodeId,
    cluster: cluster.name,
    host: addr.address,
    port: addr.port,
    url,
    dataDir: opts.dataDir,
    stores: dd.all().map((s) => ({ store: s.store, version: s.live.version ?? null })),
    keepVersions,
    admin: auth.enabled,
  })

  let closing: Promise<boolean> | undefined
  const close = (): Promise<boolean> => {
    closing ??= (async () => {
      shuttingDown = true
      peers.close()
      handler.closeConnectionsAfterResponse()
      log.info('shutdown-started', {})
      const drained = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeIdleConnections()
      // Connections become idle as their in-flight requests end (responses carry
      // "Connection: close" from now on); close them as they do.
      const sweep = setInterval(() => server.closeIdleConnections(), 50)
      let timer: NodeJS.Timeout | undefined
      const timedOut = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), opts.drainTimeoutMs ?? 30_000)
      })
      // Running jobs are cancelled; one stuck in a long file copy is not waited for past the
      // drain timeout (its staging directory is removed at the next start).
      const [inTime] = await Promise.all([
        Promise.race([drained.then(() => true), timedOut]),
        Promise.race([jobs.cancelAll().catch(() => undefined), timedOut]),
      ])
      clearInterval(sweep)
      clearTimeout(timer)
      if (!inTime) {
        log.warn('shutdown-drain-timeout', { drainTimeoutMs: opts.drainTimeoutMs ?? 30_000 })
        server.closeAllConnections()
      }
      await dd.close()
      log.info('shutdown-complete', { drained: inTime })
      return inTime
    })()
    return closing
  }

  return { nodeId: opts.nodeId, host: bound.host, port: bound.port, url, server, dataDir: dd, jobs, metrics, close }
}
