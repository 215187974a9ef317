import { addressOf } from '../../cluster/address-book'
import { errorMessage } from '../../common/errors'
import { onEveryNode, type ClusterAdmin } from '../cluster-admin'
import type { PushEvent } from './events'

/**
 * Every reachable node learns the addresses of the cluster file's nodes before any byte
 * moves, so the nodes of the old layout list the new ones to clients and forward RESP reads
 * to them with no restart. A node that refuses (an older rostore, an address it knows
 * otherwise) is reported, not fatal: its clients still find the new nodes through the others.
 */
export async function handAddresses(admin: ClusterAdmin, ids: readonly number[], emit: (e: PushEvent) => void): Promise<void> {
  const nodes = admin.cluster.nodes.map(addressOf)
  emit({ type: 'step', message: `handing the addresses of nodes ${nodes.map((n) => n.id).join(', ')} to ${ids.length} node(s)` })
  const handed = await onEveryNode(ids, (id) => admin.node(id).learnNodes(nodes))
  for (const [id, r] of handed) {
    if (r.status === 'rejected') emit({ type: 'step', message: `node ${id} did not take the node addresses: ${errorMessage(r.reason)}` })
    else if (r.value.added.length > 0) emit({ type: 'step', message: `node ${id} learned node(s) ${r.value.added.join(', ')}` })
  }
}
