import type { Registry } from 'prom-client'
import type { Cluster, NodeTls } from '../../cluster/cluster'
import { StoreError } from '../../common/errors'
import { isSafeName } from '../../formats/store/layout/layout'
import type { RespRequestLimits } from '../../formats/wire/resp'
import type { ReadAuth } from '../auth'
import type { NodeTlsOptions } from '../tls'
import type { Logger } from '../log'
import type { ServedStores } from '../../swapper/served-store'
import type { RespStats } from './resp-stats'
import type { DrainOptions } from '../http/drain-options'
import type { RequestBudget } from '../http/request-budget'

/**
 * Everything the RESP listener takes from the node, and nothing more: it never sees the
 * data directory, the swapper or the admin jobs. A serving worker of a multi-process node
 * builds one of these from its own mirror of the stores and starts its own listener on
 * the shared port.
 */
export interface RespContext {
  readonly nodeId: number
  /** cluster.json: where the other nodes listen (`respPort`) when keys are forwarded. */
  readonly cluster: Cluster
  /** The stores as reads see them: live reader (leased per command), stale mark. */
  readonly stores: ServedStores
  readonly log: Logger
  /** Read authentication; AUTH accepts the read token only. */
  readonly readAuth: ReadAuth
  /**
   * The read token itself, sent with AUTH on connections to other nodes when keys are
   * forwarded (the nodes of a cluster share one read token).
   */
  readonly readToken?: string
  /** The node's metrics registry; the listener adds its `rostore_resp_*` metrics to it. */
  readonly registry?: Registry
  /**
   * Request bytes the serving process holds for unfinished requests, shared with its HTTP
   * side (request-budget.ts); default: a budget of 64 MiB of the listener's own.
   */
  readonly requestBudget?: RequestBudget
}

/** Options of one listener; defaults in the comments. Normalized once in startRespServer. */
export interface RespServerOptions {
  readonly host: string
  /** 0: any free port. */
  readonly port: number
  /** Keys are bare keys of this store instead of `<store>:<key>`. */
  readonly defaultStore?: string
  /** Open connections at most (10,000); the next one gets `-ERR max number of clients reached`. */
  readonly maxClients?: number
  /** Close a connection idle this long (300,000 ms; 0: never). */
  readonly idleTimeoutMs?: number
  /** Close a connection whose replies could not be sent for this long: it stopped reading (10,000 ms). */
  readonly sendTimeoutMs?: number
  /**
   * Replies waiting for one connection, in bytes, above which it stops reading commands
   * until they drain (1 MiB).
   */
  readonly outputHighWaterBytes?: number
  /** Largest single reply (64 MiB); an MGET whose values add up to more gets an error instead. */
  readonly maxReplyBytes?: number
  /** Bounds of one request: arguments, argument size, query buffer (formats/wire/resp.ts). */
  readonly requestLimits?: Partial<RespRequestLimits>
  /** Time a forwarded lookup may take on one node before the next replica is asked (2,000 ms). */
  readonly forwardTimeoutMs?: number
  /**
   * Serve RESP over TLS (TLS 1.2 at least) with this certificate: a node that serves HTTPS
   * serves RESP over TLS too (docs/API.md "RESP and TLS"), never in plain text.
   */
  readonly tls?: NodeTlsOptions
  /** How forwards check the other nodes' certificates when they serve TLS (default: the system's CAs). */
  readonly peerTls?: NodeTls
  /** Pipelined connections per other node (2). */
  readonly peerConnections?: number
  /** After a node could not be reached, forwards skip it for this long (1,000 ms). */
  readonly peerRetryMs?: number
  /**
   * Read plain-TCP connections as Node streams (a Buffer and a 'data' event per read)
   * instead of through the listener's shared read buffer (read-buffer-socket.ts); false by
   * default. TLS connections are always read as streams.
   */
  readonly streamReads?: boolean
}

export interface NormalizedRespOptions extends Required<Omit<RespServerOptions, 'defaultStore' | 'requestLimits' | 'tls' | 'peerTls'>> {
  readonly defaultStore: string | undefined
  readonly tls: NodeTlsOptions | undefined
  readonly peerTls: NodeTls | undefined
  readonly requestLimits: Partial<RespRequestLimits>
}

export function normalizeRespOptions(o: RespServerOptions): NormalizedRespOptions {
  const positive = (name: string, v: number | undefined, dflt: number, allowZero = false): number => {
    const n = v ?? dflt
    if (!Number.isSafeInteger(n) || n < (allowZero ? 0 : 1))
      throw new RangeError(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer, got ${n}`)
    return n
  }
  if (o.defaultStore !== undefined && !isSafeName(o.defaultStore)) {
    throw new StoreError('RO_BAD_OPTION', `--resp-default-store: invalid store name ${JSON.stringify(o.defaultStore.slice(0, 140))}`)
  }
  return {
    host: o.host,
    port: positive('port', o.port, 0, true),
    defaultStore: o.defaultStore,
    tls: o.tls,
    peerTls: o.peerTls ?? (o.tls === undefined ? undefined : {}),
    maxClients: positive('maxClients', o.maxClients, 10_000),
    idleTimeoutMs: positive('idleTimeoutMs', o.idleTimeoutMs, 300_000, true),
    sendTimeoutMs: positive('sendTimeoutMs', o.sendTimeoutMs, 10_000),
    outputHighWaterBytes: positive('outputHighWaterBytes', o.outputHighWaterBytes, 1 << 20),
    maxReplyBytes: positive('maxReplyBytes', o.maxReplyBytes, 64 << 20),
    requestLimits: o.requestLimits ?? {},
    forwardTimeoutMs: positive('forwardTimeoutMs', o.forwardTimeoutMs, 2_000),
    peerConnections: positive('peerConnections', o.peerConnections, 2),
    peerRetryMs: positive('peerRetryMs', o.peerRetryMs, 1_000, true),
    streamReads: o.streamReads ?? false,
  }
}

/** A running listener. */
export interface RespServer {
  readonly host: string
  readonly port: number
  readonly stats: RespStats
  /** Whether the listener speaks TLS. */
  readonly tls: boolean
  /** Certificate rotation: new connections use the new pair, open ones keep theirs. RO_BAD_OPTION without TLS. */
  setSecureContext(tls: NodeTlsOptions): void
  /**
   * Stop accepting; connections get the replies of the commands they already sent and are
   * then closed; after `drainMs` (default 5,000) the rest are cut. Resolves true when
   * everything drained in time. Idempotent. A `shared` listener (a serving worker's) stays
   * open and resets what arrives; the caller closes it with closeListener (DrainOptions).
   */
  close(drainMs?: number, opts?: DrainOptions): Promise<boolean>
  closeListener(): Promise<void>
}
