import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { errorMessage, StoreError } from '../common/errors'
import { loadCluster, type Cluster } from '../cluster/cluster'
import { DataDir } from '../swapper/data-dir'
import type { OpenReader, VerifyDir } from '../swapper/store-versions'
import { DEFAULT_KEEP_VERSIONS } from '../swapper/store-versions'
import { createRequestHandler } from './request-handler'
import { AdminAuth, ReadAuth } from './auth'
import { createFetchRunner } from './fetch-route'
import { MAX_URL_BYTES } from './http-util'
import { Jobs } from './jobs'
import { PushLocks } from './push-lock'
import { createLogger, type Logger } from './log'
import { NodeMetrics } from './metrics'
import type { RespServer, RespServerOptions } from './resp/resp-context'
import { startRespServer } from './resp/resp-server'

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
  /**
   * The RESP (Redis protocol) listener, on `bind` like HTTP. It starts when `resp.port` is
   * given (0: any free port) or cluster.json has a `respPort` for this node.
   */
  readonly resp?: Omit<RespServerOptions, 'host' | 'port'> & { readonly port?: number }
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
  /** prom-client's default process metrics (RSS, heap, event loop). Default true. */
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
  /** The RESP listener, when the node runs one. */
  readonly resp?: RespServer
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
  const auth = new AdminAuth(opts.adminToken)
  const readAuth = new ReadAuth(opts.readToken, auth)
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

  let shuttingDown = false
  const host = opts.bind ?? me.host
  let bound = { host, port: opts.port ?? me.port }
  const handler = createRequestHandler({
    nodeId: opts.nodeId,
    cluster,
    stores: dd,
    dataDir: dd,
    auth,
    readAuth,
    metrics,
    jobs,
    pushLocks: new PushLocks(),
    log,
    accessLog: opts.accessLog ?? false,
    startedAt: Date.now(),
    keepVersions,
    fetch,
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
  // RESP: a few lines on purpose, so a multi-process node can run the same call in each worker.
  const respPort = opts.resp?.port ?? me.respPort
  let resp: RespServer | undefined
  if (respPort !== undefined) {
    const respCtx = { nodeId: opts.nodeId, cluster, stores: dd, log, readAuth, readToken: opts.readToken, registry: metrics.registry }
    resp = await startRespServer(respCtx, { ...opts.resp, host, port: respPort }).catch(async (err: unknown) => {
      server.close()
      await dd.close()
      throw err
    })
  }
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
    readAuth: readAuth.enabled,
    ...(resp ? { respPort: resp.port, respDefaultStore: opts.resp?.defaultStore ?? null } : {}),
  })

  let closing: Promise<boolean> | undefined
  const close = (): Promise<boolean> => {
    closing ??= (async () => {
      shuttingDown = true
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
      const [inTime, respInTime] = await Promise.all([
        Promise.race([drained.then(() => true), timedOut]),
        resp ? resp.close(opts.drainTimeoutMs ?? 30_000) : Promise.resolve(true),
        Promise.race([jobs.cancelAll().catch(() => undefined), timedOut]),
      ])
      clearInterval(sweep)
      clearTimeout(timer)
      if (!inTime) {
        log.warn('shutdown-drain-timeout', { drainTimeoutMs: opts.drainTimeoutMs ?? 30_000 })
        server.closeAllConnections()
      }
      await dd.close()
      log.info('shutdown-complete', { drained: inTime && respInTime })
      return inTime && respInTime
    })()
    return closing
  }

  return { nodeId: opts.nodeId, host: bound.host, port: bound.port, url, server, dataDir: dd, jobs, metrics, resp, close }
}
