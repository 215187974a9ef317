import type { IncomingMessage, ServerResponse } from 'node:http'
import { StoreError } from '../../common/errors'
import { parsePushRecord } from '../../swapper/disk/push-record'
import type { AppContext } from '../context'
import { readJsonObject, sendJson } from '../http/http-util'
import type { PushRecordsBody } from '../peers/peer-records'
import { controlRoute } from './route'

/**
 * Admin routes of the push records (swapper/disk/push-record.ts, server/peers/peer-check.ts): a push
 * writes its record on every node; a node that restarts reads its peers' records.
 */
export const ADMIN_PEER_ROUTES = [
  controlRoute({
    path: '/admin/push-records',
    methods: ['GET'],
    access: 'admin',
    op: 'admin_push_records',
    handle: (ctx, _req, res) => listRecords(ctx, res),
  }),
  controlRoute({
    path: '/admin/stores/:store/push-record',
    methods: ['PUT'],
    access: 'admin',
    op: 'admin_push_record',
    handle: (ctx, req, res, p) => putRecord(ctx, p.store, req, res),
  }),
]

function listRecords(ctx: AppContext, res: ServerResponse): void {
  const stores: PushRecordsBody['stores'] = {}
  for (const sv of ctx.dataDir.all()) stores[sv.store] = { live: sv.liveVersion ?? null, record: sv.pushRecord ?? null }
  sendJson(res, 200, { node: ctx.nodeId, stores } satisfies PushRecordsBody)
}

/**
 * Keeps the record when it is newer than the one held (`applied` says whether it is now
 * the store's record). A store this node does not have is created only when the record
 * says this node missed the push (so it answers 503, not 404, until it has the version).
 */
async function putRecord(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const record = parsePushRecord(await readJsonObject(req))
  let sv = ctx.dataDir.get(store)
  if (!sv) {
    if (!record.missed.includes(ctx.nodeId)) throw new StoreError('RO_NOT_FOUND', `no store ${store} on this node`)
    sv = await ctx.dataDir.getOrCreate(store)
  }
  const applied = await sv.setPushRecord(record)
  ctx.peers?.onRecord(store)
  sendJson(res, 200, { store, applied, record: sv.pushRecord ?? null, behind: sv.behind ?? null })
}
