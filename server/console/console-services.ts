import type { NodeTls } from '../../cluster/cluster'
import type { AppContext } from '../context'
import { clusterView, type ClusterView } from './cluster-view'
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
  private last: { doneAt: number | undefined; view: Promise<ClusterView> } | undefined

  constructor(
    readonly events: EventRing,
    peers: Partial<ConsolePeerOptions> = {},
  ) {
    this.peers = { ...peers, timeoutMs: peers.timeoutMs ?? 1500 }
  }

  clusterView(ctx: AppContext): Promise<ClusterView> {
    const last = this.last
    if (last && (last.doneAt === undefined || Date.now() - last.doneAt < CLUSTER_VIEW_REUSE_MS)) return last.view
    const view = clusterView(ctx, this)
    const entry: { doneAt: number | undefined; view: Promise<ClusterView> } = { doneAt: undefined, view }
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
