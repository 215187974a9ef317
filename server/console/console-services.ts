import type { NodeTls } from '../../cluster/cluster'
import type { EventRing } from './event-ring'
import { NodeSampler } from './node-sampler'

export interface ConsolePeerOptions {
  /** Sent to the peers (the read token, else the admin token: the nodes of a cluster share them). */
  readonly token?: string
  /** Ask the peers over HTTPS (a node serving TLS). */
  readonly tls?: NodeTls
  /** Wait for one peer's answer; default 1500 ms. */
  readonly timeoutMs: number
}

/** A cluster view is shared by the pages asking within this time, so viewers do not multiply the fan-out. */
const CLUSTER_VIEW_REUSE_MS = 750

/** What the console routes use on a node: its events, its samples, how it asks its peers. */
export class ConsoleServices {
  readonly sampler = new NodeSampler()
  readonly peers: ConsolePeerOptions
  /** The newest cluster view: in flight (`doneAt` undefined) or finished at `doneAt`. */
  private last: { doneAt: number | undefined; view: Promise<unknown> } | undefined

  constructor(
    readonly events: EventRing,
    peers: Partial<ConsolePeerOptions> = {},
  ) {
    this.peers = { ...peers, timeoutMs: peers.timeoutMs ?? 1500 }
  }

  /**
   * The cluster view `produce` makes (cluster-view.ts), shared by the pages asking while one
   * is in flight or within CLUSTER_VIEW_REUSE_MS of the last. Taking the producer keeps this
   * class free of the views, which depend on the node's context.
   */
  sharedClusterView<T>(produce: () => Promise<T>): Promise<T> {
    const last = this.last
    if (last && (last.doneAt === undefined || Date.now() - last.doneAt < CLUSTER_VIEW_REUSE_MS)) return last.view as Promise<T>
    const view = produce()
    const entry: { doneAt: number | undefined; view: Promise<unknown> } = { doneAt: undefined, view }
    this.last = entry
    view.then(
      () => (entry.doneAt = Date.now()),
      () => {
        if (this.last === entry) this.last = undefined
      },
    )
    return view
  }
}
