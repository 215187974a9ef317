import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Cluster } from '../cluster/cluster'
import type { Preload } from '../formats/store/read/store-reader-api'
import type { DataDir } from '../swapper/data-dir'
import type { ServedStores } from '../swapper/served-store'
import type { ServingMirror } from '../swapper/serving-mirror'
import type { AdminAuth, ReadAuth } from './auth'
import type { ConsoleServices } from './console/console-services'
import type { TokenBucket } from '../fetcher/transfer/token-bucket'
import type { FetchRunner, SourceAccess } from './jobs/fetch-runner'
import type { Jobs } from './jobs/jobs'
import type { FetchingVersions } from './jobs/fetching-versions'
import type { PeerEgress } from './peers/peer-egress'
import type { NodeLearning } from './peers/learned-nodes'
import type { Logger } from './log'
import type { NodeMetrics } from './metrics'
import type { PeerCheck } from './peers/peer-check'
import type { PushLocks } from './peers/push-lock'
import type { PushDecisions } from './peers/push-decisions'
import type { ReadLimits } from './http/read-limits'
import type { RequestBudget } from './http/request-budget'
import type { StoreCreation } from './jobs/store-creation'

/** What the read routes use: the stores as served in this process. Every serving loop has one. */
export interface ReadContext {
  readonly nodeId: number
  readonly cluster: Cluster
  /** The stores as the read routes see them (live readers, stale marks). */
  readonly stores: ServedStores
  /** Checked on routes with access 'read' in every serving loop (off when no read token is configured). */
  readonly readAuth: ReadAuth
  readonly metrics: NodeMetrics
  readonly log: Logger
  readonly accessLog: boolean
  readonly shuttingDown: () => boolean
  /** Bounds of read responses (read-limits.ts); defaults when absent. */
  readonly readLimits?: ReadLimits
  /** Request bytes this serving process holds for unfinished requests, HTTP and RESP together; absent: unbounded. */
  readonly requestBudget?: RequestBudget
}

/**
 * What the control routes (admin, status, metrics) use: the node's versions on disk, jobs
 * and services. They run where that state lives: the only process of a single-process
 * node, or the supervisor of a multi-process one.
 */
export interface AppContext extends ReadContext {
  readonly dataDir: DataDir<ServingMirror>
  readonly auth: AdminAuth
  readonly jobs: Jobs
  readonly startedAt: number
  readonly keepVersions: number
  /** What a version's reader makes resident before it serves (`--preload`). */
  readonly preload: Preload
  readonly fetch?: FetchRunner
  /** The node-wide limit of the streaming routes (`--stream-max-bytes-per-sec`); none: unlimited. */
  readonly streamBucket?: TokenBucket
  /** Format-2 fetches under way, whose verified files the peer file route serves. */
  readonly fetching?: FetchingVersions
  /** The peer file route's throttle and stream bound; absent: unthrottled, unbounded. */
  readonly peerEgress?: PeerEgress
  /** The allow-list and the bound on source file-system calls, for every admin path or URL. */
  readonly sources: SourceAccess
  /** Install and fetch jobs create a store lazily and drop it when nothing got installed. */
  readonly storeCreation: StoreCreation
  readonly pushLocks: PushLocks
  /** Prepares, votes and outcomes of cluster pushes (absent in tests that build a bare context). */
  readonly decisions?: PushDecisions
  /** The startup check with the peers and self-repair of missed pushes (peer-check.ts). */
  readonly peers?: PeerCheck
  /** Learns other nodes' addresses (`POST /admin/cluster/nodes`); absent: the route answers 404. */
  readonly nodeLearning?: NodeLearning
  readonly address: () => { host: string; port: number }
  /** Serving event loops of the node, for /status. */
  readonly workers?: () => WorkersStatus
  /**
   * /metrics with a metrics token (`--metrics-token`): that token or the admin token. Absent
   * or without a token: /metrics is open, as Prometheus scrapes it by default.
   */
  readonly metricsAuth?: ReadAuth
  /** The console's events, samples and peer access (routes/console.ts); absent: its views answer 404. */
  readonly console?: ConsoleServices
  /** The node's metrics as one text (a supervisor sums its workers'); default: this process's registry. */
  readonly renderMetrics?: () => Promise<{ contentType: string; body: string }>
}

export interface WorkersStatus {
  readonly configured: number
  readonly serving: number
  readonly restarts: number
}

/** Where a serving loop sends the control routes: handled here, or forwarded to the supervisor. */
export type ControlTarget =
  | { readonly kind: 'local'; readonly ctx: AppContext }
  | { readonly kind: 'forward'; readonly forward: (req: IncomingMessage, res: ServerResponse) => Promise<void> }
