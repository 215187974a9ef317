import type { DataDir } from '../swapper/data-dir'
import type { ServingMirror } from '../swapper/serving-mirror'
import type { Jobs } from './jobs/jobs'
import type { NodeMetrics } from './metrics'
import type { RespServer } from './resp/resp-context'

/** A node started by startNode: its address, its parts, and how to stop it. */
export interface RunningNode {
  readonly nodeId: number
  readonly host: string
  readonly port: number
  /** http://host:port (IPv6 hosts in brackets). */
  readonly url: string
  /** Serving event loops (1: this process serves; N > 1: N worker processes). */
  readonly workers: number
  readonly dataDir: DataDir<ServingMirror>
  readonly jobs: Jobs
  readonly metrics: NodeMetrics
  /** The RESP port, when the node serves one (every serving loop listens on it). */
  readonly respPort?: number
  /** The RESP listener itself: single-process nodes only (a multi-process node's are in its workers). */
  readonly resp?: RespServer
  /**
   * Certificate rotation (`--tls-cert`/`--tls-key` read again): new connections on every
   * serving loop use the new files, open ones keep theirs. RO_BAD_OPTION when the node
   * does not serve TLS or the files are not a usable pair (the old ones stay).
   */
  reloadTls(certFile: string, keyFile: string): Promise<void>
  /**
   * Graceful stop: stop accepting, let in-flight requests finish (up to drainTimeoutMs),
   * cancel running jobs, close the readers. Resolves true when everything drained in
   * time. Idempotent.
   */
  close(): Promise<boolean>
}
