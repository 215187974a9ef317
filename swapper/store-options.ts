import type { SwapHooks, SwapLogger } from './events'
import type { OpenReader } from './open-version'

export const DEFAULT_KEEP_VERSIONS = 2

/** How long retention waits for requests still reading a replaced version before cutting them. */
export const DEFAULT_DRAIN_DEADLINE_MS = 30_000

/**
 * A full verify of a staged directory; `signal` cancels it (RO_ABORTED). `rebuilt`: files a
 * patch rebuild wrote and checked as it wrote them, not read again (verifyStore's option).
 */
export type VerifyDir = (dir: string, signal?: AbortSignal, rebuilt?: ReadonlySet<string>) => Promise<unknown>

/**
 * The real verifier, loaded on first use. It runs in a worker thread: it reads and checks
 * every byte, which on the event loop stalled every read of the node for seconds per
 * install. It reads past the page cache: the staged version must not evict the live one's
 * hot pages.
 */
export const defaultVerify: VerifyDir = async (dir, signal, rebuilt) =>
  (await import('../formats/store/scan/verify-worker')).verifyStoreOffThread(dir, {
    signal,
    dropBehind: true,
    ...(rebuilt ? { rebuilt } : {}),
  })

export interface StoreVersionsOptions {
  readonly dataDir: string
  readonly store: string
  /** When set, versions built for another node are refused. */
  readonly nodeId?: number
  /** Backups kept besides the live version (default 2). */
  readonly keepVersions?: number
  /** Create the store directory when missing (a store arriving with its first install). */
  readonly create?: boolean
  /** Opens readers for the default, in-process serving side (ignored when `serving` is given). */
  readonly openReader?: OpenReader
  readonly verify?: VerifyDir
  readonly log?: SwapLogger
  readonly hooks?: SwapHooks
  /** Retention waits this long for requests on a replaced version, then cuts them. Default 30 s. */
  readonly drainDeadlineMs?: number
  /**
   * Serve nothing (reads 503) until `peersChecked()`: a node that restarts asks its peers
   * whether it missed a push before it serves a store it had (server/peers/peer-check.ts).
   */
  readonly holdForPeers?: boolean
}
