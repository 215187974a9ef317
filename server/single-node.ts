import { watchLoopStalls } from './loop-stalls'
import type { AddressInfo } from 'node:net'
import { DataDir } from '../swapper/data-dir'
import { localServedStores } from '../swapper/local-serving'
import { ReadAuth } from './auth'
import { createHttpServer, drainHttpServer, listen, urlOf } from './http/http-listener'
import { NodeMetrics } from './metrics'
import type { RunningNode } from './running-node'
import type { NodeOptions, NodeSetup } from './node-options'
import { startLoopResp } from './node-resp'
import { announceListening, applyJobPriority, nodeBasics, nodeClose } from './node-lifecycle'
import { createRequestHandler } from './http/request-handler'
import { RequestBudget } from './http/request-budget'
import { loadTlsFiles, reloadTls } from './tls'
import type { RespServer } from './resp/resp-context'
import { createControlServices, dataDirOptions } from './control-services'

/** A node in one process: the versions, the admin API and the reads share one event loop. */
export async function startSingleProcessNode(opts: NodeOptions, setup: NodeSetup): Promise<RunningNode> {
  const basics = nodeBasics(opts)
  const { events, log, auth, readAuth } = basics

  let dataDir: DataDir | undefined = undefined
  const metrics = new NodeMetrics(() => dataDir, opts.defaultMetrics ?? true)
  dataDir = await DataDir.open(dataDirOptions(opts, setup, metrics, log, events))
  const dd = dataDir
  const control = createControlServices(opts, setup, dd, metrics, log, events)
  const { jobs } = control
  applyJobPriority(setup, log)

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
  await announceListening(opts, setup, dd, basics, control, { host: addr.address, port: addr.port, url, workers: 1, respPort: resp?.port })

  const stopStallWatch = watchLoopStalls(log)
  const closeNode = nodeClose({
    opts,
    dd,
    log,
    services: control,
    startedFields: {},
    markShuttingDown: () => (shuttingDown = true),
    drainServing: async (timeoutMs) => {
      const [httpInTime, respInTime] = await Promise.all([drainHttpServer(server, handler, timeoutMs), resp ? resp.close(timeoutMs) : true])
      return httpInTime && respInTime
    },
  })

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
    close: () => {
      stopStallWatch()
      return closeNode()
    },
    reloadTls: async (certFile, keyFile) => {
      await reloadTls(server, certFile, keyFile)
      if (resp?.tls) resp.setSecureContext(await loadTlsFiles(certFile, keyFile))
    },
  }
}
