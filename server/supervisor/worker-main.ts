/**
 * Entry point of a serving worker (forked by the supervisor's WorkerPool). It says hello,
 * reproduces the stores' serving state from the supervisor's snapshot, listens on the
 * node's shared port, serves reads and forwards control routes, and applies the
 * supervisor's calls in order. It exits when asked to shut down (after draining) or when
 * the supervisor is gone.
 */
import type { AddressInfo } from 'node:net'
import { AddressBook } from '../../cluster/address-book'
import { errorMessage, isStoreError, StoreError } from '../../common/errors'
import { readerOpener } from '../../swapper/open-version'
import type { ReadContext } from '../context'
import { closeListener, createHttpServer, drainHttpServer, listen } from '../http/http-listener'
import { createLogger } from '../log'
import { watchLoopStalls } from '../loop-stalls'
import { NodeMetrics } from '../metrics'
import { createRequestHandler, type RequestHandler } from '../http/request-handler'
import { RequestBudget } from '../http/request-budget'
import { AdminAuth, ReadAuth } from '../auth'
import { startLoopResp } from '../node-resp'
import type { RespServer } from '../resp/resp-context'
import { createControlProxy } from './control-proxy'
import { isToWorker, type FromWorker, type ToWorker, type WorkerCall, type WorkerConfig } from './protocol'
import { WorkerStores } from './worker-stores'
import { Server as HttpsServer } from 'node:https'
import type { NodeServer } from '../tls'

const index = Number(process.env['ROSTORE_WORKER_INDEX'] ?? 0)
const log = createLogger({ base: { worker: index } })

let stores: WorkerStores | undefined
let metrics: NodeMetrics | undefined
let server: NodeServer | undefined
let handler: RequestHandler | undefined
let resp: RespServer | undefined
let config: WorkerConfig | undefined
let book: AddressBook | undefined
let shuttingDown = false

function send(m: FromWorker): void {
  if (process.connected) process.send?.(m)
}

/**
 * Changes are applied one at a time, in the order the supervisor sent them. Calls that only
 * wait or read (a drain that may take its whole deadline, counts, metrics) run beside them,
 * so a slow drain never delays the next swap.
 */
let queue: Promise<void> = Promise.resolve()
const BESIDE_THE_QUEUE: ReadonlySet<WorkerCall['op']> = new Set([
  'drained',
  'draining',
  'accessMode',
  'corruptReads',
  'residency',
  'metrics',
])
process.on('message', (m: unknown) => {
  if (!isToWorker(m)) return
  const failed = (err: unknown): void => log.error('worker-message-failed', { error: errorMessage(err) })
  if (m.rostore === 'call' && BESIDE_THE_QUEUE.has(m.call.op) && stores) handle(m).catch(failed)
  else queue = queue.then(() => handle(m)).catch(failed)
})

// The supervisor died (or closed the channel): nothing can change our state any more.
process.on('disconnect', () => {
  log.warn('supervisor-gone', { index })
  process.exit(1)
})

async function handle(m: ToWorker): Promise<void> {
  if (m.rostore === 'init') {
    // A worker that cannot serve (port taken, store unreadable) exits: the supervisor reports it.
    return init(m.config, m.stores).catch((err: unknown) => {
      log.error('worker-start-failed', { index, error: errorMessage(err) })
      process.exit(1)
    })
  }
  try {
    send({ rostore: 'reply', id: m.id, ok: true, value: await call(m.call) })
  } catch (err) {
    send({ rostore: 'reply', id: m.id, ok: false, code: isStoreError(err) ? err.code : undefined, message: errorMessage(err) })
  }
}

async function init(cfg: WorkerConfig, snapshot: Parameters<WorkerStores['load']>[0]): Promise<void> {
  config = cfg
  stores = new WorkerStores(cfg.nodeId, readerOpener(cfg.preload), log, index === 0)
  const loadErrors = await stores.load(snapshot)
  const m = new NodeMetrics(() => undefined, cfg.defaultMetrics)
  metrics = m
  // One object for every reader of the cluster in this worker, so learned nodes reach them all.
  book = new AddressBook(cfg.cluster)
  const budget = new RequestBudget(cfg.readLimits.maxBufferedRequestBytes)
  const ctx: ReadContext = {
    nodeId: cfg.nodeId,
    cluster: book,
    stores,
    // The admin token only ever matches here (HTTP reads accept it); admin routes run in the supervisor.
    readAuth: new ReadAuth(cfg.readToken, new AdminAuth(cfg.adminToken)),
    metrics,
    log,
    accessLog: cfg.accessLog,
    shuttingDown: () => shuttingDown,
    readLimits: cfg.readLimits,
    // Each serving process has its own: the budget bounds what one process can be made to hold.
    requestBudget: budget,
  }
  m.watchRequestBudget(budget)
  watchLoopStalls(log)
  handler = createRequestHandler(ctx, { kind: 'forward', forward: createControlProxy(cfg.controlSocket, log) })
  server = createHttpServer(
    handler,
    cfg.timeouts,
    cfg.tls,
    { maxConnections: cfg.maxConnections, onDrop: () => m.connectionsDropped.inc() },
    cfg.httpReadPath === 'fast' ? ctx : undefined,
  )
  const addr = (await listen(server, { host: cfg.host, port: cfg.port })) as AddressInfo
  // node:cluster shares the RESP port between the workers as it does the HTTP port (a
  // plain net or tls server listening in a worker is handed out round-robin by the primary).
  resp = await startLoopResp(ctx, cfg.resp ? { ...cfg.resp, tls: cfg.tls } : undefined, cfg.readToken)
  send({ rostore: 'ready', host: addr.address, port: addr.port, respPort: resp?.port, loadErrors })
}

async function call(c: WorkerCall): Promise<unknown> {
  if (!stores || !metrics) throw new Error('call before init')
  switch (c.op) {
    case 'metrics':
      return metrics.registry.getMetricsAsJSON()
    case 'shutdown':
      return shutdown()
    case 'tls':
      if (!(server instanceof HttpsServer)) throw new StoreError('RO_BAD_OPTION', 'the node does not serve TLS')
      server.setSecureContext({ cert: c.cert, key: c.key })
      if (resp?.tls) resp.setSecureContext({ cert: c.cert, key: c.key })
      return undefined
    case 'nodes':
      // The supervisor checked them; ids this worker knows already are the same nodes.
      return book?.learn(c.nodes, 'keep').length
    default:
      return stores.apply(c)
  }
}

async function shutdown(): Promise<boolean> {
  shuttingDown = true
  const drainMs = config?.drainTimeoutMs ?? 30_000
  log.info('worker-draining', { index, pid: process.pid })
  const [httpInTime, respInTime] = await Promise.all([
    // The listeners are shared through the node's supervisor (node:cluster).
    server && handler ? drainHttpServer(server, handler, drainMs, { shared: true }) : true,
    resp ? resp.close(drainMs, { shared: true }) : true,
  ])
  // Last, together: while either drain held the process up, both kept resetting (DrainOptions).
  await Promise.all([server ? closeListener(server) : undefined, resp?.closeListener()])
  const inTime = httpInTime && respInTime
  await stores?.close()
  // Exit after the reply is on its way.
  setImmediate(() => process.exit(inTime ? 0 : 1))
  return inTime
}

send({ rostore: 'hello' })
