/** A push's nodes as its prepare names them: those that hold the version, and the layout's others. */
export interface PushNodes {
  readonly participants: readonly number[]
  readonly missed: readonly number[]
}

/** One node's vote on a push, and the outcome if it knows it. */
export interface NodeVote {
  readonly node: number
  readonly vote: 'commit' | 'abort' | null
  readonly outcome: 'commit' | 'abort' | null
}

/** The layout's nodes of a push (participants and missed), sorted. */
export function layoutOf(p: PushNodes): number[] {
  return [...new Set([...p.participants, ...p.missed])].sort((a, b) => a - b)
}

/**
 * Votes a decision needs: a majority of the version's layout, not of the nodes that
 * fetched it. Any two such majorities share a node whoever fetched, and a version a
 * minority of the layout holds can never be committed (docs/RELIABILITY.md §4).
 */
export function quorumOf(p: PushNodes): number {
  return Math.floor(layoutOf(p).length / 2) + 1
}

/** Whether a commit can still be reached: enough participants to form a quorum. */
export function canCommit(p: PushNodes): boolean {
  return new Set(p.participants).size >= quorumOf(p)
}

/**
 * The outcome the votes decide, or null: an outcome a node already knows, else commit
 * when a quorum of participants voted commit (only they hold the version and will swap),
 * abort when a quorum of layout nodes voted abort (any node of the layout may).
 */
export function outcomeOf(p: PushNodes, votes: readonly NodeVote[]): 'commit' | 'abort' | null {
  const known = votes.find((v) => v.outcome !== null)?.outcome
  if (known) return known
  const q = quorumOf(p)
  const layout = new Set(layoutOf(p))
  const part = new Set(p.participants)
  const voters = (o: 'commit' | 'abort', among: ReadonlySet<number>): number =>
    new Set(votes.filter((v) => v.vote === o && among.has(v.node)).map((v) => v.node)).size
  if (voters('commit', part) >= q) return 'commit'
  if (voters('abort', layout) >= q) return 'abort'
  return null
}
