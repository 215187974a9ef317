import { startNode } from '../../server/node'
import type { NodeOptions } from '../../server/node-options'
import { nullLogger } from '../../server/log'
import type { RunningNode } from '../../server/running-node'

/**
 * A node of a one-node, one-partition cluster, served by this process on an ephemeral
 * loopback port and silent: the server's unit tests start it with their own limits.
 */
export function startLoopbackNode(dataDir: string, extra: Partial<NodeOptions> = {}): Promise<RunningNode> {
  return startNode({
    cluster: { name: 'unit', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0] }] },
    nodeId: 0,
    dataDir,
    bind: '127.0.0.1',
    port: 0,
    log: nullLogger,
    defaultMetrics: false,
    ...extra,
  })
}
