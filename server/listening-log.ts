import type { DataDir } from '../swapper/data-dir'
import type { ServingMirror } from '../swapper/serving-mirror'
import type { AdminAuth, ReadAuth } from './auth'
import type { NodeOptions, NodeSetup } from './node-options'
import { respLogFields } from './node-resp'

/** Where a node listens once it serves, and how many serving loops it runs. */
export interface ListeningAt {
  readonly host: string
  readonly port: number
  readonly url: string
  readonly workers: number
  readonly respPort: number | undefined
}

/**
 * The fields of the `listening` line both kinds of node log once they serve (single-node.ts,
 * supervisor/supervisor.ts): where, which stores at which versions, and which protections
 * are on. Tests and operators wait for this line, so both kinds write the same one.
 */
export function listeningFields(
  opts: NodeOptions,
  setup: NodeSetup,
  dd: DataDir<ServingMirror>,
  auth: { readonly admin: AdminAuth; readonly read: ReadAuth },
  at: ListeningAt,
): Record<string, unknown> {
  return {
    nodeId: opts.nodeId,
    cluster: setup.cluster.name,
    host: at.host,
    port: at.port,
    url: at.url,
    workers: at.workers,
    dataDir: opts.dataDir,
    stores: dd.all().map((s) => ({ store: s.store, version: s.serving.activeVersion ?? null })),
    keepVersions: setup.keepVersions,
    admin: auth.admin.enabled,
    readAuth: auth.read.enabled,
    tls: opts.tls !== undefined,
    ...respLogFields(setup.resp, at.respPort),
  }
}
