import type { IncomingMessage, ServerResponse } from 'node:http'
import { addressOf, MAX_ADDRESSES, MAX_HOST_LENGTH, parseNodeAddresses } from '../../cluster/address-book'
import { StoreError } from '../../common/errors'
import type { AppContext } from '../context'
import { readJsonObject, sendJson } from '../http/http-util'
import { controlRoute } from './route'

/** Bound of the body: every allowed entry at its longest fits with room to spare. */
export const MAX_NODES_BODY_BYTES = MAX_ADDRESSES * (MAX_HOST_LENGTH + 96)

/**
 * The node's address book (cluster/address-book.ts): `GET` lists the nodes it knows, `POST`
 * adds nodes it does not know (a push to a new layout hands every node the new nodes'
 * addresses), so it lists them in `/stores/<s>` and forwards RESP reads to them without a
 * restart. Known ids keep their address: another address for one is refused (409).
 */
export const ADMIN_NODE_ROUTES = [
  controlRoute({
    path: '/admin/cluster/nodes',
    methods: ['GET'],
    access: 'admin',
    op: 'admin_cluster_nodes',
    handle: (ctx, _req, res) => listNodes(ctx, res, []),
  }),
  controlRoute({
    path: '/admin/cluster/nodes',
    methods: ['POST'],
    access: 'admin',
    op: 'admin_learn_nodes',
    handle: (ctx, req, res) => learnNodes(ctx, req, res),
  }),
]

async function learnNodes(ctx: AppContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!ctx.nodeLearning) throw new StoreError('RO_NOT_FOUND', 'this node does not learn node addresses')
  const addrs = parseNodeAddresses(await readJsonObject(req, MAX_NODES_BODY_BYTES), 'the body')
  const added = await ctx.nodeLearning.learn(addrs)
  if (added.length > 0) ctx.log.info('nodes-learned', { nodes: added })
  listNodes(
    ctx,
    res,
    added.map((a) => a.id),
  )
}

function listNodes(ctx: AppContext, res: ServerResponse, added: readonly number[]): void {
  sendJson(res, 200, { node: ctx.nodeId, cluster: ctx.cluster.name, added, nodes: ctx.cluster.nodes.map(addressOf) })
}
