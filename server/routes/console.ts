import type { ServerResponse } from 'node:http'
import { StoreError } from '../../common/errors'
import { sendAsset, type ConsoleAsset } from '../console/assets'
import { clusterView } from '../console/cluster-view'
import type { ConsoleServices } from '../console/console-services'
import { nodeView } from '../console/node-view'
import type { AppContext } from '../context'
import { sendJson } from '../http/http-util'
import { controlRoute, readRoute } from './route'

/**
 * The console (docs/API.md, "The console"): a static page, its script and style (public:
 * they hold no data), and the two read-only views it polls, behind the read token when
 * the node has one. The views run where the node's versions live.
 */
/** The static files and the paths they are served at (`/ui` and `/ui/` both the page). */
const ASSET_PATHS: readonly (readonly [string, ConsoleAsset])[] = [
  ['/ui', 'page'],
  ['/ui/', 'page'],
  ['/ui/console.js', 'script'],
  ['/ui/console.css', 'style'],
]

export const CONSOLE_ROUTES = [
  ...ASSET_PATHS.map(([path, asset]) =>
    readRoute({ path, methods: ['GET', 'HEAD'], access: 'public', op: 'console', handle: (_c, req, res) => sendAsset(asset, req, res) }),
  ),
  controlRoute({
    path: '/ui/node.json',
    methods: ['GET'],
    access: 'read',
    op: 'console_node',
    handle: async (ctx, _req, res) => sendView(res, await nodeView(ctx, consoleOf(ctx))),
  }),
  controlRoute({
    path: '/ui/cluster.json',
    methods: ['GET'],
    access: 'read',
    op: 'console_cluster',
    handle: async (ctx, _req, res) => {
      const con = consoleOf(ctx)
      sendView(res, await con.sharedClusterView(() => clusterView(ctx, con)))
    },
  }),
]

/** `/ui/<name>.json`: the console's views, control routes (request-handler.ts forwards them from a worker). */
export function isConsoleViewPath(segments: readonly string[]): boolean {
  return segments.length === 2 && segments[0] === 'ui' && (segments[1] === 'node.json' || segments[1] === 'cluster.json')
}

function consoleOf(ctx: AppContext): ConsoleServices {
  if (!ctx.console) throw new StoreError('RO_NOT_FOUND', 'this node has no console')
  return ctx.console
}

function sendView(res: ServerResponse, view: unknown): void {
  sendJson(res, 200, view, { 'X-Content-Type-Options': 'nosniff' })
}
