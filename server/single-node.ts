import type { AddressInfo } from 'node:net'
import { DataDir } from '../swapper/data-dir'
import { localServedStores } from '../swapper/local-serving'
import { AdminAuth, ReadAuth, warnAboutAuth } from './auth'
import { createHttpServer, drainHttpServer, listen, urlOf } from './http/http-listener'
import { createLogger } from './log'
import { NodeMetrics } from './metrics'
import type { RunningNode } from './running-node'
import type { NodeOptions, NodeSetup } from './node-options'
import { startLoopResp } from './node-resp'
import { listeningFields } from './listening-log'
import { createRequestHandler } from './http/request-handler'
import { RequestBudget } from './http/request-budget'
import { loadTlsFiles, reloadTls } from './tls'
import type { RespServer } from './resp/resp-context'
import { createControlServices, dataDirOptions } from './control-services'
import { EventRing } from './console/event-ring'

/** A node in one process: the versions, the admin API and the reads share one event loop. */
export async function startSingleProcessNode(opts: NodeOptions, setup: NodeSetup): Promise<RunningNode> {
  const events = new EventRing()
  const log = events.tap(opts.log ?? createLogger())
  const auth = new AdminAuth(opts.adminToken)
  const readAuth = new ReadAuth(opts.readToken, auth)
  warnAboutAuth(auth, opts.adminToken, log)

  let dataDir: DataDir | undefined = undefined
  const metrics = new NodeMetrics(() => dataDir, opts.defaultMetrics ?? true)
  dataDir = await DataDir.open(dataDirOptions(opts, setup, metrics, log, events))
  const dd = dataDir
  const control = createControlServices(opts, setup, dd, metrics, log, events)
  const { jobs, peers } = control

  let shuttingDown = false
  let bound = { host: setup.host, port: setup.port }
  const budget = new RequestBudget(setup.readLimits.maxBufferedRequestBytes)
  metrics.watchRequestBudget(budget)
  const ctx = {
    nodeId: opts.nodeId,
    cluster: setup.cluster,
    stores: localServedStores(dd),
    dataDir: dd,
    auth,
    readAuth,
    metricsAuth: new ReadAuth(opts.metricsToken, auth, 'metrics token'),
    metrics,
    ...control,
    log,
    accessLog: opts.accessLog ?? false,
    startedAt: Date.now(),
    keepVersions: setup.keepVersions,
    preload: setup.preload,
    readLimits: setup.readLimits,
    requestBudget: budget,
    shuttingDown: () => shuttingDown,
    address: () => bound,
  }
  const handler = createRequestHandler(ctx, { kind: 'local', ctx })
  const server = createHttpServer(
    handler,
    opts.timeouts,
    opts.tls,
    { maxConnections: setup.maxConnections, onDrop: () => metrics.connectionsDropped.inc() },
    setup.httpReadPath === 'fast' ? ctx : undefined,
  )
  let addr: AddressInfo
  try {
    addr = (await listen(server, { host: setup.host, port: setup.port })) as AddressInfo
  } catch (err) {
    await dd.close()
    throw err
  }
  bound = { host: addr.address, port: addr.port }
  let resp: RespServer | undefined
  try {
    resp = await startLoopResp(ctx, setup.resp, opts.readToken)
  } catch (err) {
    server.close()
    await dd.close()
    throw err
  }
  const url = urlOf(addr.address, addr.port, opts.tls !== undefined)
  // Listening already (peers asking this node get answers), serving stores only once decided.
  await peers.start()
  await control.resolver.start()
  log.info(
    'listening',
    listeningFields(
      opts,
      setup,
      dd,
      { admin: auth, read: readAuth },
      { host: addr.address, port: addr.port, url, workers: 1, respPort: resp?.port },
    ),
  )

  let closing: Promise<boolean> | undefined
  const close = (): Promise<boolean> => {
    closing ??= (async () => {
      shuttingDown = true
      peers.close()
      control.resolver.close()
      log.info('shutdown-started', {})
      const timeoutMs = opts.drainTimeoutMs ?? 30_000
      // Running jobs are cancelled; one stuck in a long file copy is not waited for past the
      // drain timeout (its staging directory is removed at the next start).
      const [httpInTime, respInTime] = await Promise.all([
        drainHttpServer(server, handler, timeoutMs),
        resp ? resp.close(timeoutMs) : true,
        Promise.race([jobs.cancelAll().catch(() => undefined), new Promise((r) => setTimeout(r, timeoutMs).unref())]),
      ])
      const inTime = httpInTime && respInTime
      if (!inTime) log.warn('shutdown-drain-timeout', { drainTimeoutMs: timeoutMs })
      await dd.close()
      log.info('shutdown-complete', { drained: inTime })
      return inTime
    })()
    return closing
  }

  return {
    nodeId: opts.nodeId,
    host: bound.host,
    port: bound.port,
    url,
    workers: 1,
    dataDir: dd,
    jobs,
    metrics,
    resp,
    respPort: resp?.port,
    close,
    reloadTls: async (certFile, keyFile) => {
      await reloadTls(server, certFile, keyFile)
      if (resp?.tls) resp.setSecureContext(await loadTlsFiles(certFile, keyFile))
    },
  }
}
