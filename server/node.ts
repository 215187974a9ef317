import { resolveNodeSetup, type NodeOptions } from './node-options'
import type { RunningNode } from './running-node'
import { startSingleProcessNode } from './single-node'
import { startSupervisedNode } from './supervisor/supervisor'

export type { NodeOptions, NodeTimeouts } from './node-options'
export type { RunningNode } from './running-node'

/**
 * Start a serving node: recover and open every store under dataDir, then listen. With
 * `workers > 1` this process becomes the node's supervisor and forks the serving workers.
 */
export async function startNode(opts: NodeOptions): Promise<RunningNode> {
  const setup = await resolveNodeSetup(opts)
  return setup.workers > 1 ? startSupervisedNode(opts, setup) : startSingleProcessNode(opts, setup)
}
