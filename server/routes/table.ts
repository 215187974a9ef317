import { ADMIN_CONTROL_ROUTES } from './admin-control'
import { ADMIN_DECISION_ROUTES } from './admin-decisions'
import { ADMIN_NODE_ROUTES } from './admin-nodes'
import { ADMIN_PEER_ROUTES } from './admin-peers'
import { ADMIN_VERSION_ROUTES } from './admin-versions'
import { CONSOLE_ROUTES } from './console'
import { NODE_INFO_ROUTES } from './node-info'
import { PEER_FILE_ROUTES } from './peer-files'
import { READ_ROUTES } from './reads'
import { STREAM_ROUTES } from './stream-dump'
import type { Route } from './route'

/** Every route of the node's HTTP API (docs/API.md). */
export const ROUTES: readonly Route[] = [
  ...NODE_INFO_ROUTES,
  ...READ_ROUTES,
  ...ADMIN_VERSION_ROUTES,
  ...PEER_FILE_ROUTES,
  ...ADMIN_CONTROL_ROUTES,
  ...ADMIN_PEER_ROUTES,
  ...ADMIN_DECISION_ROUTES,
  ...ADMIN_NODE_ROUTES,
  ...STREAM_ROUTES,
  ...CONSOLE_ROUTES,
]
