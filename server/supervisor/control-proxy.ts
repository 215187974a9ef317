import { Agent, request, type IncomingMessage, type ServerResponse } from 'node:http'
import { errorResponse, MAX_JSON_BODY_BYTES, readBody, sendJson } from '../http/http-util'
import type { Logger } from '../log'
import { canHandOff, handOff } from './stream-handoff'

/** Hop-by-hop headers a proxy must not pass on (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer'])

function endToEnd(headers: IncomingMessage['headers']): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v
  return out
}

/**
 * A serving worker's forwarder of control routes (admin, status, metrics) to the
 * supervisor's control socket. The request body (JSON, at most MAX_JSON_BODY_BYTES, the
 * control routes' own bound) is read first and sent whole, so the supervisor never answers
 * (an early 401) while the body is still on its way; the answer streams back with back
 * pressure. The supervisor authenticates and validates as it does for any caller. Streams
 * (dumps) are not relayed: their connection is handed to the supervisor (stream-handoff.ts).
 */
export function createControlProxy(socketPath: string, log: Logger): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 })
  return async (req, res) => {
    if (canHandOff(req)) return handOff(req, res, log)
    let body: Buffer
    try {
      body = await readBody(req, MAX_JSON_BODY_BYTES)
    } catch (err) {
      const { status, body: error } = errorResponse(err)
      sendJson(res, status, error, { Connection: 'close' })
      return
    }
    const headers = endToEnd(req.headers)
    headers['content-length'] = String(body.length)
    return new Promise<void>((resolve) => {
      let answered = false
      let done = false
      const finish = (): void => {
        done = true
        resolve()
      }
      const upstream = request({ socketPath, method: req.method, path: req.url, headers, agent }, (answer) => {
        answered = true
        res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers))
        answer.pipe(res)
        answer.on('end', finish)
        answer.on('error', () => {
          res.destroy()
          finish()
        })
      })
      upstream.on('error', (err: NodeJS.ErrnoException) => {
        // Once the answer is here, a late write error changes nothing (the answer's own
        // stream reports its failures above).
        if (answered || done) return
        log.warn('control-forward-failed', { method: req.method, code: err.code, error: err.message })
        // Refused: nothing reached the supervisor, so nothing happened. Any other failure
        // (it died while handling the call) leaves the outcome unknown: cut the connection,
        // as a node that dies mid-call does, rather than claim the call had no effect.
        if (!res.headersSent && (err.code === 'ECONNREFUSED' || err.code === 'ENOENT')) {
          sendJson(
            res,
            503,
            { error: { code: 'RO_UNAVAILABLE', message: 'the node supervisor is not answering' } },
            { Connection: 'close' },
          )
        } else {
          res.destroy()
        }
        finish()
      })
      // The client went away before the answer was complete: stop the forwarded call's stream.
      res.on('close', () => {
        if (!done) upstream.destroy()
      })
      upstream.end(body)
    })
  }
}
