/** What nodes answer about push leases and push decisions (docs/API.md), as the client sees it. */

export type Outcome = 'commit' | 'abort'

/** What a node is told when it prepared for a push (docs/API.md, push decisions). */
export interface RemotePrepared {
  readonly pushId: string
  readonly kind: 'push' | 'rollback'
  readonly version: number
  readonly participants: readonly number[]
  readonly missed: readonly number[]
  readonly source?: string
  readonly seq: number
  readonly fetched: boolean
}

/** A node's vote and known outcome of one push. */
export interface RemoteVote {
  readonly pushId: string
  readonly version: number | null
  readonly vote: Outcome | null
  readonly outcome: Outcome | null
  readonly prepared: boolean
}

export interface RemoteDecisions {
  readonly prepared: (RemotePrepared & { readonly at: string }) | null
  /** Prepared, and the push's lease is not held here any more: the nodes are finishing it. */
  readonly abandoned: boolean
  readonly decisions: readonly { pushId: string; version: number; vote?: Outcome; outcome?: Outcome; at: string }[]
}

/** A node's push lease on a store (GET /admin/stores/<store>/lock). */
export interface RemoteLease {
  readonly owner: string
  readonly expiresAt: string
  readonly expiresInMs: number
}
