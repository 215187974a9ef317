import type { IncomingMessage, ServerResponse } from 'node:http'
import { StoreError } from '../../common/errors'
import { parseOutcome, parsePrepared } from '../../swapper/disk/push-decision'
import { requestVersion } from '../../swapper/disk/version-names'
import type { AppContext } from '../context'
import { onlyFields, readJsonObject, sendJson } from '../http/http-util'
import { controlRoute } from './route'
import { knownStore } from './store-access'

/**
 * Admin routes of the push decisions (server/peers/push-decisions.ts, docs/RELIABILITY.md §4):
 * the pusher prepares every participant, writes their votes and tells the outcome; nodes
 * finishing a push whose pusher died read and write each other's votes the same way.
 */
export const ADMIN_DECISION_ROUTES = [
  controlRoute({
    path: '/admin/stores/:store/decision',
    methods: ['GET'],
    access: 'admin',
    op: 'admin_decision',
    handle: (ctx, _req, res, p) => view(ctx, p.store, res),
  }),
  controlRoute({
    path: '/admin/stores/:store/prepare',
    methods: ['POST'],
    access: 'admin',
    op: 'admin_prepare',
    handle: (ctx, req, res, p) => prepare(ctx, p.store, req, res),
  }),
  controlRoute({
    path: '/admin/stores/:store/decisions/:push',
    methods: ['GET', 'POST'],
    access: 'admin',
    op: 'admin_vote',
    handle: (ctx, req, res, p) => vote(ctx, p.store, p.push, req, res),
  }),
]

function decisions(ctx: AppContext): NonNullable<AppContext['decisions']> {
  if (!ctx.decisions) throw new StoreError('RO_CONFLICT', 'push decisions are not available on this node')
  return ctx.decisions
}

async function view(ctx: AppContext, store: string, res: ServerResponse): Promise<void> {
  knownStore(ctx, store)
  const st = await decisions(ctx).view(store)
  const lease = ctx.pushLocks.view(store)
  sendJson(res, 200, {
    store,
    prepared: st.prepared ?? null,
    abandoned: st.prepared !== undefined && lease?.owner !== st.prepared.pushId,
    decisions: st.decisions,
  })
}

async function prepare(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const p = parsePrepared(await readJsonObject(req))
  knownStore(ctx, store)
  sendJson(res, 200, { store, prepared: await decisions(ctx).prepare(store, p) })
}

async function vote(ctx: AppContext, store: string, pushId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  knownStore(ctx, store)
  if (req.method === 'GET') {
    sendJson(res, 200, await decisions(ctx).voteView(store, pushId))
    return
  }
  const body = await readJsonObject(req)
  onlyFields(body, ['vote', 'version', 'outcome'])
  const v = parseOutcome(body['vote'], 'vote')
  const version = requestVersion(body['version'])
  const outcome = body['outcome'] === undefined ? undefined : parseOutcome(body['outcome'], 'outcome')
  sendJson(res, 200, await decisions(ctx).decide(store, pushId, version, v, outcome))
}
