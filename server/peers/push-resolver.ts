import type { Cluster, NodeTls } from '../../cluster/cluster'
import { canCommit, layoutOf, outcomeOf, quorumOf, type NodeVote } from '../../cluster/push-quorum'
import { errorMessage } from '../../common/errors'
import type { Outcome, PreparedPush } from '../../swapper/disk/push-decision'
import type { Logger } from '../log'
import { peerJson } from './peer-call'
import type { PushDecisions, VoteView } from './push-decisions'
import type { PushLocks } from './push-lock'

const TICK_MS = 1000
const MAX_RETRY_MS = 30_000

/**
 * Finishes a push whose pusher is gone, on this node, with its peers (docs/RELIABILITY.md
 * §4). A prepared push whose lease this node no longer sees held is resolved: the votes
 * of the version's layout nodes are read; a majority of the layout for one outcome (or a
 * peer that knows the outcome) decides it; otherwise this node proposes (commit if a
 * participant voted commit and the participants can form a majority, else abort) to its
 * own empty vote and the peers' empty votes, and reads again. Without a majority of the
 * layout reachable it keeps serving its old version and retries with a growing pause. Votes are write-once on every node, so two resolvers (or a resolver and
 * a late pusher) can never make different outcomes.
 */
export class PushResolver {
  private timer: NodeJS.Timeout | undefined
  private readonly busy = new Set<string>()
  private readonly nextAt = new Map<string, number>()
  private readonly delay = new Map<string, number>()

  constructor(
    private readonly o: {
      nodeId: number
      cluster: Cluster
      decisions: PushDecisions
      locks: PushLocks
      adminToken?: string
      tls?: NodeTls
      log: Logger
      timeoutMs?: number
    },
  ) {}

  /** Starts looking at prepared pushes every second (after the startup peer check). */
  async start(): Promise<void> {
    await this.o.decisions.load()
    this.timer = setInterval(() => this.tick(), TICK_MS)
    this.timer.unref()
    this.tick()
  }

  close(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
  }

  private tick(): void {
    this.o.decisions
      .dropUnused((store) => this.o.locks.holder(store))
      .catch((err: unknown) => this.o.log.warn('unused-fetch-removal-failed', { error: errorMessage(err) }))
    for (const sv of this.o.decisions.loadedStores()) {
      const p = this.o.decisions.prepared(sv)
      if (!p || this.o.locks.holder(sv) === p.pushId || this.busy.has(sv) || Date.now() < (this.nextAt.get(sv) ?? 0)) continue
      this.busy.add(sv)
      void this.resolve(sv, p)
        .then((done) => this.after(sv, done))
        .catch((err: unknown) => {
          this.o.log.warn('push-resolve-failed', { store: sv, pushId: p.pushId, error: errorMessage(err) })
          this.after(sv, false)
        })
        .finally(() => this.busy.delete(sv))
    }
  }

  private after(store: string, done: boolean): void {
    if (done) {
      this.delay.delete(store)
      this.nextAt.delete(store)
      return
    }
    const d = this.delay.get(store) ?? TICK_MS
    this.delay.set(store, Math.min(d * 2, MAX_RETRY_MS))
    this.nextAt.set(store, Date.now() + d)
  }

  /** One round; true when the outcome is known and applied here. */
  private async resolve(store: string, p: PreparedPush, readAgain = true): Promise<boolean> {
    const own = await this.o.decisions.voteView(store, p.pushId)
    if (own.outcome !== null) {
      await this.o.decisions.decide(store, p.pushId, p.version, own.outcome, own.outcome)
      return true
    }
    // Every node of the layout counts: those that missed the push can vote abort.
    const peers = layoutOf(p).filter((id) => id !== this.o.nodeId)
    const answers = new Map<number, VoteView>()
    await Promise.all(
      peers.map(async (id) => {
        const v = await this.call(id, 'GET', store, p.pushId).catch(() => undefined)
        if (v) answers.set(id, v)
      }),
    )
    const votes: NodeVote[] = [
      { node: this.o.nodeId, ...own },
      ...[...answers].map(([node, v]) => ({ node, vote: v.vote, outcome: v.outcome })),
    ]
    const majority = quorumOf(p)
    const outcome = outcomeOf(p, votes)
    if (outcome !== null) {
      await this.o.decisions.decide(store, p.pushId, p.version, outcome, outcome)
      this.o.log.info('push-resolved', {
        store,
        pushId: p.pushId,
        outcome,
        votes: votes.map((v) => v.vote),
        peersAnswered: [...answers.keys()],
      })
      // Tell the peers too: they apply it now instead of at their own next round.
      await Promise.all(
        peers.map((id) => this.call(id, 'POST', store, p.pushId, { vote: outcome, version: p.version, outcome }).catch(() => undefined)),
      )
      return true
    }
    // No majority yet: propose. Commit only if a participant voted it (then every
    // participant had prepared) and the participants can make a majority; otherwise abort.
    const committed = votes.some((v) => v.vote === 'commit' && p.participants.includes(v.node))
    // (Its own vote, if any, stays: votes are write-once.)
    const proposal: Outcome = own.vote !== 'abort' && committed && canCommit(p) ? 'commit' : 'abort'
    await this.o.decisions.decide(store, p.pushId, p.version, proposal)
    await Promise.all(
      [...answers]
        .filter(([id, v]) => v.vote === null && (proposal === 'abort' || p.participants.includes(id)))
        .map(([id]) => this.call(id, 'POST', store, p.pushId, { vote: proposal, version: p.version }).catch(() => undefined)),
    )
    this.o.log.info('push-resolving', { store, pushId: p.pushId, proposal, peersAnswered: [...answers.keys()], majority })
    // Read again once at once if enough peers answered to decide; otherwise back off.
    return readAgain && answers.size + 1 >= majority ? this.resolve(store, p, false) : false
  }

  private async call(id: number, method: 'GET' | 'POST', store: string, pushId: string, body?: unknown): Promise<VoteView | undefined> {
    const node = this.o.cluster.nodes.find((n) => n.id === id)
    if (!node) return undefined
    const r = await peerJson(node, {
      adminToken: this.o.adminToken,
      tls: this.o.tls,
      timeoutMs: this.o.timeoutMs ?? 3000,
      method,
      path: `/admin/stores/${encodeURIComponent(store)}/decisions/${encodeURIComponent(pushId)}`,
      body,
    })
    return r.status === 200 ? (r.body as VoteView) : undefined
  }
}
