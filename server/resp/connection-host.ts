import type { Socket } from 'node:net'
import type { RespWriter } from '../../formats/wire/resp-writer'
import type { NormalizedRespOptions } from './resp-context'
import type { RespStats } from './resp-stats'

/** A reply given later (a forwarded read), or replies queued behind one. */
export interface Deferred {
  readonly w: RespWriter
  ready: boolean
}

/** What a connection needs of its listener; `C` is the connection (connection.ts), kept a parameter so this file does not import it back. */
export interface ConnectionHost<C> {
  /** Shared by all connections: replies of one read event, sent with one write. */
  readonly writer: RespWriter
  readonly opts: NormalizedRespOptions
  readonly stats: RespStats
  /** Runs the command now in `conn.parser`. Never throws. */
  dispatch(conn: C): void
  closed(conn: C): void
}

/** Deferred replies in flight per connection before it stops reading commands. */
export const MAX_DEFERRED = 512

/**
 * Arguments (keys, roughly) one connection's commands may take before it yields to the
 * others: its next commands run on a later turn of the event loop (setImmediate), after the
 * reads the other connections have waiting. A client pipelining 10,000-key MGETs gets one
 * of them per turn, not every command of its 64 KiB reads; replies stay in order.
 */
export const TURN_ARGS = 4096

/** Sent to a connection refused because the serving process's request budget is spent. */
export const BUSY_REPLY = "RO_BUSY the node's buffers for requests are full; try again later"

/** After an ended connection has sent its last reply, how long the client gets to close its side. */
const LINGER_MS = 1000

/**
 * After the last reply of a connection the node ended: a client that keeps its side open is
 * cut LINGER_MS after the last byte went out (a stopping node does not wait for it).
 */
export function cutAfterLastReply(socket: Socket): void {
  const linger = (): void => void setTimeout(() => socket.destroy(), LINGER_MS).unref()
  if (socket.writableFinished) linger()
  else socket.once('finish', linger)
}
