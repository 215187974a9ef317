import type { NodeAddress } from '../../cluster/address-book'
import type { Cluster } from '../../cluster/cluster'
import type { Preload } from '../../formats/store/read/store-reader-api'
import type { StaleMark } from '../../swapper/disk/stale-mark'
import type { HttpReadPath, NodeTimeouts } from '../node-options'
import type { ReadLimits } from '../http/read-limits'
import type { RespServerOptions } from '../resp/resp-context'

/**
 * Messages between a node's supervisor and its serving workers (node:cluster IPC, JSON).
 * Every message carries `rostore` so other users of the channel (prom-client) are ignored.
 *
 *   worker → supervisor: hello; ready (listening); reply (to a call)
 *   supervisor → worker: init (config and the stores' serving state); call
 */

/** The serving side of one store, as a worker that starts must reproduce it. */
export interface StoreSnapshot {
  readonly store: string
  readonly active?: VersionDir
  readonly prepared: readonly VersionDir[]
  readonly stale?: StaleMark
  readonly loadError?: string
}

export interface VersionDir {
  readonly version: number
  readonly dir: string
}

export interface WorkerConfig {
  readonly nodeId: number
  readonly cluster: Cluster
  readonly host: string
  readonly port: number
  readonly timeouts?: NodeTimeouts
  /** PEM certificate and key when the node serves HTTPS. */
  readonly tls?: { readonly cert: string; readonly key: string }
  readonly accessLog: boolean
  readonly drainTimeoutMs: number
  readonly defaultMetrics: boolean
  readonly readLimits: ReadLimits
  /** Connections this worker serves at once. */
  readonly maxConnections: number
  /** The supervisor's control socket, where workers forward admin, status and metrics. */
  readonly controlSocket: string
  /**
   * Read authentication of the worker's HTTP reads and RESP connections: the read token,
   * and the admin token (HTTP reads accept it too; see ReadAuth). Undefined: off.
   */
  readonly readToken?: string
  readonly adminToken?: string
  /** The worker's RESP listener on the node's shared RESP port (TLS from `tls`); none when absent. */
  readonly resp?: Omit<RespServerOptions, 'tls'>
  /** How the worker's readers warm up (`--preload`). */
  readonly preload: Preload
  /** `--http-read-path`. */
  readonly httpReadPath: HttpReadPath
}

/** What the supervisor asks of every worker; each call is answered by one reply. */
export type WorkerCall =
  | { readonly op: 'attach'; readonly store: string }
  | { readonly op: 'close'; readonly store: string }
  | { readonly op: 'prepare'; readonly store: string; readonly version: number; readonly dir: string }
  | { readonly op: 'discard'; readonly store: string; readonly version: number }
  | { readonly op: 'activate'; readonly store: string; readonly version: number; readonly dir: string }
  | { readonly op: 'stale'; readonly store: string; readonly mark: StaleMark | null }
  | { readonly op: 'loadError'; readonly store: string; readonly message: string | null }
  | { readonly op: 'drained'; readonly store: string; readonly deadlineMs: number }
  | { readonly op: 'draining'; readonly store: string }
  | { readonly op: 'accessMode'; readonly store: string }
  | { readonly op: 'corruptReads'; readonly store: string }
  | { readonly op: 'residency'; readonly store: string }
  | { readonly op: 'metrics' }
  | { readonly op: 'tls'; readonly cert: string; readonly key: string }
  /** The node's address book after it learned nodes (POST /admin/cluster/nodes); a new worker gets it in its config. */
  | { readonly op: 'nodes'; readonly nodes: readonly NodeAddress[] }
  | { readonly op: 'shutdown' }

export type ToWorker =
  | { readonly rostore: 'init'; readonly config: WorkerConfig; readonly stores: readonly StoreSnapshot[] }
  | { readonly rostore: 'call'; readonly id: number; readonly call: WorkerCall }

export type FromWorker =
  | { readonly rostore: 'hello' }
  | {
      readonly rostore: 'ready'
      readonly host: string
      readonly port: number
      /** The RESP port the worker listens on, when the node serves RESP. */
      readonly respPort?: number
      /** Stores whose live version this worker could not open, with the reason. */
      readonly loadErrors: Readonly<Record<string, string>>
    }
  | { readonly rostore: 'reply'; readonly id: number; readonly ok: true; readonly value?: unknown }
  | { readonly rostore: 'reply'; readonly id: number; readonly ok: false; readonly code?: string; readonly message: string }

export function isFromWorker(m: unknown): m is FromWorker {
  return typeof m === 'object' && m !== null && typeof (m as { rostore?: unknown }).rostore === 'string'
}

export function isToWorker(m: unknown): m is ToWorker {
  return isFromWorker(m)
}
