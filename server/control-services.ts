import { TokenBucket } from '../fetcher/transfer/token-bucket'
import type { DataDir, DataDirOptions } from '../swapper/data-dir'
import { readerOpener } from '../swapper/open-version'
import type { ServingMirror } from '../swapper/serving-mirror'
import { ConsoleServices } from './console/console-services'
import type { EventRing } from './console/event-ring'
import { createFetchRunner, SourceAccess, type FetchRunner } from './jobs/fetch-runner'
import { Jobs } from './jobs/jobs'
import { registerOperationsMetrics } from './ops-metrics'
import { NodeLearning } from './peers/learned-nodes'
import { PeerEgress } from './peers/peer-egress'
import { FetchingVersions } from './jobs/fetching-versions'
import type { Logger } from './log'
import type { NodeMetrics } from './metrics'
import type { NodeOptions, NodeSetup } from './node-options'
import { PeerCheck } from './peers/peer-check'
import { PushLocks } from './peers/push-lock'
import { PushDecisions } from './peers/push-decisions'
import { PushResolver } from './peers/push-resolver'
import { StoreCreation } from './jobs/store-creation'

/**
 * What the control side of a node runs, whichever process that is (the only one of a
 * single-process node, or the supervisor of a multi-process one): jobs, fetches, the
 * startup peer check, push leases, store creation, the stream throttle.
 */
export interface ControlServices {
  readonly jobs: Jobs
  readonly sources: SourceAccess
  readonly fetch: FetchRunner
  readonly peers: PeerCheck
  readonly pushLocks: PushLocks
  readonly decisions: PushDecisions
  /** Finishes prepared pushes whose pusher is gone; started after the peer check. */
  readonly resolver: PushResolver
  readonly storeCreation: StoreCreation
  readonly streamBucket?: TokenBucket
  /** Format-2 fetches under way, whose verified files peers may take (routes/peer-files.ts). */
  readonly fetching: FetchingVersions
  /** The peer file route's throttle (the node's fetch rate) and stream bound. */
  readonly peerEgress: PeerEgress
  /** Nodes learned at run time (`POST /admin/cluster/nodes`), kept in the data directory. */
  readonly nodeLearning: NodeLearning
  /** The console's events, samples and peer access. */
  readonly console: ConsoleServices
}

/** The data directory's options, the same for both kinds of node. */
export function dataDirOptions(opts: NodeOptions, setup: NodeSetup, metrics: NodeMetrics, log: Logger, events: EventRing): DataDirOptions {
  return {
    dir: opts.dataDir,
    nodeId: opts.nodeId,
    keepVersions: setup.keepVersions,
    openReader: opts.openReader ?? readerOpener(setup.preload),
    verify: opts.verify,
    log,
    drainDeadlineMs: opts.versionDrainMs,
    // A node of a cluster asks its peers whether it missed a push before it serves (peer-check.ts).
    holdForPeers: setup.cluster.nodes.length > 1,
    hooks: {
      onSwap: (r) => {
        metrics.onSwap(r)
        events.swapped(r)
      },
      onVersionsDeleted: (store, versions) => metrics.versionsDeleted.inc({ store }, versions.length),
    },
  }
}

export function createControlServices(
  opts: NodeOptions,
  setup: NodeSetup,
  dd: DataDir<ServingMirror>,
  metrics: NodeMetrics,
  log: Logger,
  events: EventRing,
): ControlServices {
  const jobs = new Jobs({
    log,
    onFinish: (j) => {
      metrics.jobs.inc({ kind: j.kind, state: j.state })
      events.jobFinished(j)
    },
  })
  registerOperationsMetrics(metrics.registry, { dataDir: dd, jobs })
  const sources = new SourceAccess(opts.allowedSources)
  // A node serving TLS asks its peers over HTTPS.
  const peerTls = opts.peerTls ?? (opts.tls === undefined ? undefined : {})
  const nodeLearning = new NodeLearning(setup.cluster, opts.dataDir)
  const fetching = new FetchingVersions()
  const fetch = createFetchRunner({
    nodeId: opts.nodeId,
    maxBytesPerSec: opts.fetchMaxBytesPerSec,
    sources,
    registry: metrics.registry,
    stallTimeoutMs: opts.fetchStallTimeoutMs,
    fetching,
    peerAddress: (id) => nodeLearning.book.nodes.find((n) => n.id === id),
    ...(opts.adminToken === undefined || opts.adminToken === '' ? {} : { adminToken: opts.adminToken }),
    ...(peerTls === undefined ? {} : { peerTls }),
  })
  const peers = new PeerCheck({
    nodeId: opts.nodeId,
    cluster: setup.cluster,
    dataDir: dd,
    jobs,
    fetch,
    adminToken: opts.adminToken,
    log,
    peerTls,
    timeoutMs: opts.peerCheckTimeoutMs,
    graceMs: opts.peerCheckGraceMs,
    selfRepair: opts.selfRepair,
  })
  const pushLocks = new PushLocks()
  const decisions = new PushDecisions({ dataDir: dd, log })
  const resolver = new PushResolver({
    nodeId: opts.nodeId,
    cluster: setup.cluster,
    decisions,
    locks: pushLocks,
    adminToken: opts.adminToken,
    tls: opts.peerTls ?? (opts.tls === undefined ? undefined : {}),
    log,
    timeoutMs: opts.peerCheckTimeoutMs,
  })
  return {
    jobs,
    sources,
    fetch,
    peers,
    pushLocks,
    decisions,
    resolver,
    storeCreation: new StoreCreation(dd),
    nodeLearning,
    fetching,
    // Throttles apply to peer traffic on both ends: serving peers spends the fetch rate too.
    peerEgress: new PeerEgress(opts.fetchMaxBytesPerSec, undefined, metrics.registry),
    // The peers accept the read token, or the admin token where they take no read token.
    console: new ConsoleServices(events, { token: nonEmpty(opts.readToken) ?? nonEmpty(opts.adminToken), tls: peerTls }),
    ...(setup.streamMaxBytesPerSec > 0 ? { streamBucket: new TokenBucket(setup.streamMaxBytesPerSec) } : {}),
  }
}

function nonEmpty(token: string | undefined): string | undefined {
  return token === undefined || token === '' ? undefined : token
}
