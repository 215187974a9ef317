import { watchLoopStalls } from '../loop-stalls'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { AggregatorRegistry } from 'prom-client'
import { addressOf } from '../../cluster/address-book'
import { StoreError } from '../../common/errors'
import { DataDir } from '../../swapper/data-dir'
import { readerOpener } from '../../swapper/open-version'
import type { ServedStores } from '../../swapper/served-store'
import { ReadAuth } from '../auth'
import type { AppContext } from '../context'
import { createHttpServer, drainHttpServer, listen, urlOf } from '../http/http-listener'
import { NodeMetrics } from '../metrics'
import type { RunningNode } from '../running-node'
import type { NodeOptions, NodeSetup } from '../node-options'
import { createRequestHandler } from '../http/request-handler'
import { announceListening, applyJobPriority, nodeBasics, nodeClose } from '../node-lifecycle'
import type { RespServerOptions } from '../resp/resp-context'
import { loadTlsFiles } from '../tls'
import { FanoutMirror } from './fanout-mirror'
import { WorkerPool } from './worker-pool'
import { acceptHandOff } from './stream-handoff'
import { createControlServices, dataDirOptions } from '../control-services'

/** A supervisor serves no reads itself: its workers do. */
const NO_STORES: ServedStores = { get: () => undefined, all: () => [] }

/**
 * A node of N serving workers (node:cluster processes sharing the port) and this process,
 * the supervisor: it owns the data directory (versions, LIVE pointers, retention), the
 * jobs (fetch, install) and the admin API, which the workers forward to it over a control
 * socket. Every change to what is served goes to all workers before it is answered
 * (FanoutMirror). A worker that dies is restarted from a snapshot of the serving state.
 */
export async function startSupervisedNode(opts: NodeOptions, setup: NodeSetup): Promise<RunningNode> {
  const basics = nodeBasics(opts)
  const { events, log, auth, readAuth } = basics

  let pool: WorkerPool | undefined
  const mirrors = new Map<string, FanoutMirror>()
  let dataDir: DataDir<FanoutMirror> | undefined = undefined
  const metrics = new NodeMetrics(() => dataDir, opts.defaultMetrics ?? true)
  dataDir = await DataDir.open(dataDirOptions(opts, setup, metrics, log, events), (store) => {
    // The supervisor opens a version only to check it and closes it at once: the same checks
    // (index scan and checksum, verifyIndex being on), without warming pages (madvise, mapping
    // the cached data pages) for a reader that serves nothing; each worker warms its own.
    const check = opts.openReader ?? readerOpener('none')
    const m = new FanoutMirror(store, () => pool, { openReader: check, nodeId: opts.nodeId })
    mirrors.set(store, m)
    return m
  })
  const dd = dataDir
  const services = createControlServices(opts, setup, dd, metrics, log, events)
  const { jobs } = services

  let shuttingDown = false
  let bound: { host: string; port: number; respPort?: number } = { host: setup.host, port: setup.port }
  const ctx: AppContext = {
    nodeId: opts.nodeId,
    cluster: setup.cluster,
    stores: NO_STORES,
    dataDir: dd,
    auth,
    readAuth,
    metricsAuth: new ReadAuth(opts.metricsToken, auth, 'metrics token'),
    metrics,
    ...services,
    log,
    accessLog: opts.accessLog ?? false,
    startedAt: Date.now(),
    keepVersions: setup.keepVersions,
    preload: setup.preload,
    readLimits: setup.readLimits,
    shuttingDown: () => shuttingDown,
    address: () => bound,
    workers: () => pool?.status() ?? { configured: setup.workers, serving: 0, restarts: 0 },
    renderMetrics: async () => {
      // Counters and histograms are summed over the workers and the supervisor (whose
      // own are the swaps, jobs and store gauges); process metrics describe the whole node.
      const parts = ((await pool?.call({ op: 'metrics' })) ?? []).filter((p): p is object[] => Array.isArray(p))
      const all = AggregatorRegistry.aggregate([await metrics.registry.getMetricsAsJSON(), ...parts])
      return { contentType: all.contentType, body: await all.metrics() }
    },
  }
  const handler = createRequestHandler(ctx, { kind: 'local', ctx })
  const control = createHttpServer(handler, opts.timeouts)
  // An abstract unix socket: no file to clean up, reachable only from this machine; every
  // route behind it authenticates as it does on the public port.
  const controlSocket = `\0rostore-${process.pid}-${randomBytes(6).toString('hex')}`
  try {
    await listen(control, { path: controlSocket })
    pool = new WorkerPool({
      size: setup.workers,
      exec: join(__dirname, 'worker-main.js'),
      config: {
        nodeId: opts.nodeId,
        cluster: setup.cluster,
        host: setup.host,
        port: setup.port,
        timeouts: opts.timeouts,
        ...(opts.tls ? { tls: { cert: opts.tls.cert.toString(), key: opts.tls.key.toString() } } : {}),
        accessLog: opts.accessLog ?? false,
        drainTimeoutMs: opts.drainTimeoutMs ?? 30_000,
        defaultMetrics: opts.defaultMetrics ?? true,
        readLimits: setup.readLimits,
        preload: setup.preload,
        httpReadPath: setup.httpReadPath,
        maxConnections: setup.maxConnections,
        controlSocket,
        ...(opts.readToken ? { readToken: opts.readToken, adminToken: opts.adminToken } : {}),
        ...(setup.resp ? { resp: respForWorkers(setup.resp) } : {}),
      },
      // Stores dropped since (a failed first fetch) are not reproduced.
      snapshot: () => [...mirrors.values()].filter((m) => dd.get(m.store)?.serving === m).map((m) => m.snapshot()),
      log,
      // Streams go out from here on the client's own connection (stream-handoff.ts).
      onHandOff: (message, socket) => acceptHandOff(control, message, socket, log),
    })
    // A worker forked later gets the book in its config (the book serializes its current nodes).
    services.nodeLearning.onLearned((book) => pool?.call({ op: 'nodes', nodes: book.nodes.map(addressOf) }) ?? Promise.resolve())
    bound = await pool.start()
    applyJobPriority(setup, log)
  } catch (err) {
    control.close()
    await dd.close()
    throw err
  }
  const url = urlOf(bound.host, bound.port, opts.tls !== undefined)
  await announceListening(opts, setup, dd, basics, services, {
    host: bound.host,
    port: bound.port,
    url,
    workers: setup.workers,
    respPort: bound.respPort,
  })

  const stopStallWatch = watchLoopStalls(log)
  const closeNode = nodeClose({
    opts,
    dd,
    log,
    services,
    startedFields: { workers: setup.workers },
    markShuttingDown: () => (shuttingDown = true),
    drainServing: (timeoutMs) => pool?.shutdown(timeoutMs) ?? Promise.resolve(true),
    drainLast: () => drainHttpServer(control, handler, 1000),
  })

  const reloadTls = async (certFile: string, keyFile: string): Promise<void> => {
    if (!opts.tls) throw new StoreError('RO_BAD_OPTION', 'the node does not serve TLS')
    const tls = await loadTlsFiles(certFile, keyFile)
    await pool?.call({ op: 'tls', cert: tls.cert.toString(), key: tls.key.toString() })
  }

  return {
    nodeId: opts.nodeId,
    host: bound.host,
    port: bound.port,
    url,
    workers: setup.workers,
    dataDir: dd,
    jobs,
    metrics,
    respPort: bound.respPort,
    close: () => {
      stopStallWatch()
      return closeNode()
    },
    reloadTls,
  }
}

/** The RESP options as JSON can carry them to a worker: no certificate (it comes with `tls`), the peers' CA as text. */
function respForWorkers(resp: RespServerOptions): Omit<RespServerOptions, 'tls'> {
  const { tls: _tls, peerTls, ...rest } = resp
  if (peerTls === undefined) return rest
  return { ...rest, peerTls: { ...peerTls, ...(peerTls.ca === undefined ? {} : { ca: peerTls.ca.toString() }) } }
}
