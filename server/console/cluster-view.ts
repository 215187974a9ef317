import type { ClusterNode } from '../../cluster/cluster'
import type { AppContext } from '../context'
import { PeerCallError, peerRequest } from '../peers/peer-call'
import type { ConsoleServices } from './console-services'
import { nodeView, type NodeView } from './node-view'

/** One node of the cluster as the node the console was loaded from sees it. */
export interface ClusterNodeView {
  readonly id: number
  readonly host: string
  readonly port: number
  /** The node answered HTTP (with its view, or a refusal, or no console at all). */
  readonly up: boolean
  /**
   * Why there is no view: timeout, unreachable or bad answer (the node is down, or not a
   * rostore node), refused (it did not take our token), no console (an older rostore),
   * shutting down.
   */
  readonly error: string | null
  readonly view: NodeView | null
}

export interface ClusterView {
  readonly at: string
  readonly cluster: string
  /** The node that answered (the page's origin). */
  readonly self: number
  readonly nodes: readonly ClusterNodeView[]
  /** Nodes past MAX_CONSOLE_NODES, neither asked nor listed. */
  readonly notShown: number
}

/** Nodes one view asks: far above the clusters this serves, and it bounds the fan-out and the answer. */
export const MAX_CONSOLE_NODES = 256

/** A peer's answer larger than this is refused: a node view is kilobytes (64 stores of 1024 partitions stay under it). */
export const MAX_PEER_ANSWER_BYTES = 4 << 20

/**
 * `GET /ui/cluster.json`: this node's view and every peer's `GET /ui/node.json`, asked in
 * parallel with a bounded wait, so the page talks to one node only and a dead or hung peer
 * costs at most the timeout.
 */
export async function clusterView(ctx: AppContext, con: ConsoleServices): Promise<ClusterView> {
  const all = ctx.cluster.nodes
  const nodes = await Promise.all(
    all.slice(0, MAX_CONSOLE_NODES).map(async (n): Promise<ClusterNodeView> => {
      if (n.id === ctx.nodeId) {
        const { host, port } = ctx.address()
        return { id: n.id, host: n.host || host, port: n.port || port, up: true, error: null, view: await nodeView(ctx, con) }
      }
      const base = { id: n.id, host: n.host, port: n.port }
      try {
        return { ...base, up: true, error: null, view: await askNodeView(n, con) }
      } catch (err) {
        const reason = err instanceof PeerAnswerError ? err.reason : 'unreachable'
        return { ...base, up: ANSWERED.has(reason), error: reason, view: null }
      }
    }),
  )
  return {
    at: new Date().toISOString(),
    cluster: ctx.cluster.name,
    self: ctx.nodeId,
    nodes,
    notShown: Math.max(0, all.length - MAX_CONSOLE_NODES),
  }
}

/** Reasons that come with an HTTP answer: the node is up, it just shows no view. */
const ANSWERED = new Set(['refused', 'no console', 'shutting down'])

class PeerAnswerError extends Error {
  constructor(readonly reason: string) {
    super(reason)
  }
}

async function askNodeView(node: ClusterNode, con: ConsoleServices): Promise<NodeView> {
  const { token, tls, timeoutMs } = con.peers
  let answer: { status: number; bytes: Buffer }
  try {
    answer = await peerRequest(node, {
      ...(token === undefined ? {} : { token }),
      ...(tls === undefined ? {} : { tls }),
      timeoutMs,
      method: 'GET',
      path: '/ui/node.json',
      maxBytes: MAX_PEER_ANSWER_BYTES,
    })
  } catch (err) {
    if (err instanceof PeerCallError && err.kind === 'timeout') throw new PeerAnswerError('timeout')
    if (err instanceof PeerCallError && err.kind === 'too-large') throw new PeerAnswerError('bad answer')
    throw err
  }
  const { status, bytes } = answer
  if (status === 401 || status === 403) throw new PeerAnswerError('refused')
  if (status === 404) throw new PeerAnswerError('no console')
  if (status !== 200) throw new PeerAnswerError(status === 503 ? 'shutting down' : 'bad answer')
  try {
    return checkView(node.id, JSON.parse(bytes.toString('utf8')))
  } catch {
    throw new PeerAnswerError('bad answer')
  }
}

/** The shape the page relies on; a peer answering for another id (a moved address) is refused. */
function checkView(id: number, body: unknown): NodeView {
  const v = body as Partial<NodeView> | null
  if (typeof v !== 'object' || v === null || v.id !== id) throw new Error('not this node')
  if (!Array.isArray(v.stores) || !Array.isArray(v.jobs) || !Array.isArray(v.events)) throw new Error('not a node view')
  return v as NodeView
}
