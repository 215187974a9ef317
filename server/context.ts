import type { Cluster } from '../cluster/cluster'
import type { DataDir } from '../swapper/data-dir'
import type { AdminAuth, ReadAuth } from './auth'
import type { FetchRunner } from './fetch-route'
import type { Jobs } from './jobs'
import type { Logger } from './log'
import type { NodeMetrics } from './metrics'
import type { PushLocks } from './push-lock'
import type { ServedStores } from './served-stores'

/** What every route handler may use: the node's state and services. */
export interface AppContext {
  readonly nodeId: number
  readonly cluster: Cluster
  /** The stores as the read routes see them (live readers, stale marks). */
  readonly stores: ServedStores
  /** The stores on disk: versions, install, swap (admin routes, status). */
  readonly dataDir: DataDir
  readonly auth: AdminAuth
  /** Checked on routes with access 'read' (off when no read token is configured). */
  readonly readAuth: ReadAuth
  readonly metrics: NodeMetrics
  readonly jobs: Jobs
  readonly log: Logger
  readonly accessLog: boolean
  readonly startedAt: number
  readonly keepVersions: number
  readonly fetch?: FetchRunner
  readonly pushLocks: PushLocks
  readonly shuttingDown: () => boolean
  readonly address: () => { host: string; port: number }
}
