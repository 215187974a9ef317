import type { ReadContext } from './context'
import type { RespServer, RespServerOptions } from './resp/resp-context'
import { startRespServer } from './resp/resp-server'

/**
 * The RESP listener of one serving loop: the only process of a single-process node, or
 * each worker of a multi-process one (node:cluster shares the listening port between the
 * workers as it does for HTTP). It reads the stores this loop serves and checks the same
 * read token as the loop's HTTP reads. Undefined when the node runs no RESP listener.
 */
export async function startLoopResp(
  ctx: ReadContext,
  resp: RespServerOptions | undefined,
  readToken: string | undefined,
): Promise<RespServer | undefined> {
  if (resp === undefined) return undefined
  return startRespServer(
    {
      nodeId: ctx.nodeId,
      cluster: ctx.cluster,
      stores: ctx.stores,
      log: ctx.log,
      readAuth: ctx.readAuth,
      readToken: readToken === '' ? undefined : readToken,
      registry: ctx.metrics.registry,
      requestBudget: ctx.requestBudget,
    },
    resp,
  )
}

/** The startup log fields of the RESP listener (port, default store, TLS). */
export function respLogFields(resp: RespServerOptions | undefined, port: number | undefined): Record<string, unknown> {
  if (resp === undefined) return { resp: false }
  return { respPort: port ?? resp.port, respDefaultStore: resp.defaultStore ?? null, respTls: resp.tls !== undefined }
}
