import { canCommit, layoutOf, outcomeOf, quorumOf, type NodeVote } from '../../../cluster/push-quorum'

const v = (node: number, vote: NodeVote['vote'], outcome: NodeVote['outcome'] = null): NodeVote => ({ node, vote, outcome })

describe('push quorum: a majority of the layout, not of the nodes that fetched', () => {
  test('the layout is the participants and the missed nodes', () => {
    expect(layoutOf({ participants: [2, 0], missed: [1, 0] })).toEqual([0, 1, 2])
    expect(quorumOf({ participants: [0, 1], missed: [2] })).toBe(2)
    expect(quorumOf({ participants: [0, 1], missed: [2, 3] })).toBe(3)
  })

  test('a minority of participants can never commit, whatever they vote', () => {
    const p = { participants: [0], missed: [1, 2] }
    expect(canCommit(p)).toBe(false)
    expect(outcomeOf(p, [v(0, 'commit')])).toBeNull()
    // Two of four is no majority either.
    const half = { participants: [0, 1], missed: [2, 3] }
    expect(canCommit(half)).toBe(false)
    expect(outcomeOf(half, [v(0, 'commit'), v(1, 'commit')])).toBeNull()
  })

  test('commit counts participants only; abort counts any layout node; a known outcome wins', () => {
    const p = { participants: [0, 1], missed: [2] }
    expect(outcomeOf(p, [v(0, 'commit'), v(1, 'commit')])).toBe('commit')
    // A missed node's commit vote is not a participant's: it holds no prepare and would not swap.
    expect(outcomeOf(p, [v(0, 'commit'), v(2, 'commit')])).toBeNull()
    expect(outcomeOf(p, [v(0, 'commit'), v(1, 'abort'), v(2, 'abort')])).toBe('abort')
    // Votes of nodes outside the layout, or counted twice, do not count.
    expect(outcomeOf(p, [v(1, 'abort'), v(1, 'abort'), v(7, 'abort')])).toBeNull()
    expect(outcomeOf(p, [v(2, null, 'commit')])).toBe('commit')
  })
})
