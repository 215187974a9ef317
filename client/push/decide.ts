import { canCommit, layoutOf, outcomeOf, quorumOf } from '../../cluster/push-quorum'
import { errorMessage, isStoreError } from '../../common/errors'
import { onEveryNode, type ClusterAdmin } from '../cluster-admin'
import type { Outcome, RemotePrepared, RemoteVote } from '../node-client'
import type { PushEvent } from './events'

export interface DecideResult {
  /** null: no majority of the layout answered (or a minority holds the version); the nodes finish it among themselves. */
  readonly outcome: Outcome | null
  /** Why the push did not commit, when it did not. */
  readonly reason?: string
  /** Each participant's answer to the outcome (applied there: swapped, or cleaned up), when there is one. */
  readonly applied: ReadonlyMap<number, PromiseSettledResult<RemoteVote>>
  /** The errors of the prepares and votes that failed (a full disk on a node is said as such by its caller). */
  readonly errors: readonly unknown[]
}

/** How long a prepare waits for the nodes to finish the decision of an earlier push whose pusher died. */
const EARLIER_PUSH_WAIT_MS = 30_000

/**
 * The decision of a push or rollback (docs/RELIABILITY.md §4): every participant prepares
 * (it holds the version, verified), then gets the pusher's vote, commit (or abort when a
 * prepare failed); the outcome is what a majority of the version's LAYOUT says (a vote,
 * once written, never changes, whoever wrote it first): commit votes of participants, or
 * abort votes of any layout node, which an abort is also written to. It is then told to
 * every participant, which applies it itself: commit swaps, abort drops what was fetched.
 * A push that a minority of the layout holds is not decided at all (nothing prepared).
 */
export async function decideCluster(
  admin: ClusterAdmin,
  store: string,
  p: Omit<RemotePrepared, 'fetched'>,
  fetchedOn: ReadonlySet<number>,
  emit: (e: PushEvent) => void,
): Promise<DecideResult> {
  const ids = p.participants
  const layout = layoutOf(p)
  if (!canCommit(p))
    return {
      outcome: null,
      reason: `only ${ids.length} of the layout's ${layout.length} nodes hold version ${p.version}; a decision needs ${quorumOf(p)}`,
      applied: new Map(),
      errors: [],
    }
  const prepared = await onEveryNode(ids, (id) => prepareOne(admin, id, store, { ...p, fetched: fetchedOn.has(id) }, emit))
  const unprepared = [...prepared].filter(([, r]) => r.status === 'rejected')
  const want: Outcome = unprepared.length === 0 ? 'commit' : 'abort'
  const why =
    unprepared.length === 0
      ? undefined
      : `prepare failed on ${unprepared.map(([id, r]) => `node ${id}: ${errorMessage((r as PromiseRejectedResult).reason)}`).join('; ')}`
  // An abort is written to the layout's other nodes too: with participants down, theirs make the majority.
  const voters = want === 'commit' ? ids : layout
  emit({ type: 'step', message: `${p.kind} ${p.pushId}: voting ${want} on ${voters.length} node(s)${why ? ` (${why})` : ''}` })
  const votes = await onEveryNode(voters, (id) => admin.node(id).vote(store, p.pushId, { vote: want, version: p.version }))
  const held = [...votes].flatMap(([node, r]) => (r.status === 'fulfilled' ? [{ node, vote: r.value.vote, outcome: r.value.outcome }] : []))
  const counted = (id: number): boolean => ids.includes(id)
  const errors = [...prepared.values(), ...[...votes].filter(([id]) => counted(id)).map(([, r]) => r)].flatMap((r) =>
    r.status === 'rejected' ? [r.reason as unknown] : [],
  )
  const outcome = outcomeOf(p, held)
  if (outcome === null) {
    return {
      outcome,
      reason: `no majority of the layout's ${layout.length} node(s) answered the vote (${held.length} did); the nodes decide by themselves once they reach each other`,
      applied: new Map(),
      errors,
    }
  }
  emit({ type: 'step', message: `${p.kind} ${p.pushId}: decided ${outcome}; the nodes apply it` })
  const applied = await onEveryNode(ids, (id) => admin.node(id).vote(store, p.pushId, { vote: outcome, version: p.version, outcome }))
  return {
    outcome,
    ...(outcome === 'abort' ? { reason: why ?? 'the nodes aborted the push (its pusher was taken for gone)' } : {}),
    applied,
    errors,
  }
}

/** Prepares one node, waiting while it still finishes an earlier push whose pusher died. */
async function prepareOne(admin: ClusterAdmin, id: number, store: string, p: RemotePrepared, emit: (e: PushEvent) => void): Promise<void> {
  const until = Date.now() + EARLIER_PUSH_WAIT_MS
  for (let pause = 250; ; pause = Math.min(pause * 2, 2000)) {
    try {
      return await admin.node(id).prepare(store, p)
    } catch (err) {
      if (!isStoreError(err, 'RO_CONFLICT') || !/not decided yet/.test(errorMessage(err)) || Date.now() + pause > until) throw err
      emit({ type: 'step', message: `node ${id} is finishing an earlier push of ${store}; waiting` })
      await new Promise((r) => setTimeout(r, pause))
    }
  }
}
