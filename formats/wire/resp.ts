/**
 * RESP, the Redis serialization protocol (RESP2, and RESP3 after `HELLO 3`), as pure
 * functions and small state machines over bytes; nothing here touches a socket.
 *
 *   resp-request.ts   incremental parser of client requests (multibulk and inline), with limits
 *   resp-writer.ts    reply and command encoder into one growing buffer
 *   resp-reply.ts     incremental parser of replies (RESP2 and RESP3 types)
 *   resp-pipeline.ts  pipelined request/reply matching over any byte transport
 *
 * The server (server/resp/) and the client (client/resp-*.ts) both build on these.
 */
import { MAX_KEY_BYTES } from '../input/types'

/** The protocol version a connection speaks: 2 by default, 3 after `HELLO 3`. */
export type RespProto = 2 | 3

export const CR = 0x0d
export const LF = 0x0a

/** Bounds on what one client request may hold; every one is enforced before bytes are kept. */
export interface RespRequestLimits {
  /** Arguments per command, the command name included. Default 10,001 (an MGET of 10,000 keys). */
  readonly maxArgs: number
  /** Bytes of one argument (bulk string). Default 65,535: the node's key limit. */
  readonly maxBulkBytes: number
  /** Bytes of one inline (telnet-style) command line. Default 64 KiB, as Redis. */
  readonly maxInlineBytes: number
  /** Bytes of one command held while it is incomplete (the query buffer). Default 16 MiB. */
  readonly maxCommandBytes: number
}

export const DEFAULT_REQUEST_LIMITS: RespRequestLimits = {
  maxArgs: 10_001,
  maxBulkBytes: MAX_KEY_BYTES,
  maxInlineBytes: 64 << 10,
  maxCommandBytes: 16 << 20,
}

/**
 * What a connection may send before it has authenticated, where a read token is set:
 * enough for AUTH and HELLO ... AUTH ... SETNAME, as Redis 7 allows (10 arguments of at most
 * 16 KiB), so a client that never authenticates holds at most 64 KiB of request bytes, not
 * the 16 MiB of an authenticated one.
 */
export const UNAUTHENTICATED_REQUEST_LIMITS: RespRequestLimits = {
  maxArgs: 10,
  maxBulkBytes: 16 << 10,
  maxInlineBytes: 16 << 10,
  maxCommandBytes: 64 << 10,
}

/** The limits before AUTH where a node allows an authenticated client `full`: never looser than those. */
export function unauthenticatedLimits(full: RespRequestLimits): RespRequestLimits {
  const u = UNAUTHENTICATED_REQUEST_LIMITS
  return {
    maxArgs: Math.min(full.maxArgs, u.maxArgs),
    maxBulkBytes: Math.min(full.maxBulkBytes, u.maxBulkBytes),
    maxInlineBytes: Math.min(full.maxInlineBytes, u.maxInlineBytes),
    maxCommandBytes: Math.min(full.maxCommandBytes, u.maxCommandBytes),
  }
}

/** Bounds on replies a client accepts from a server it talks to. */
export interface RespReplyLimits {
  /** Bytes of one bulk string. Default 512 MiB (Redis's own bound). */
  readonly maxBulkBytes: number
  /** Elements of one aggregate (array, map, set). Default 16 Mi. */
  readonly maxElements: number
  /** Nesting depth of aggregates. Default 32. */
  readonly maxDepth: number
}

export const DEFAULT_REPLY_LIMITS: RespReplyLimits = { maxBulkBytes: 512 << 20, maxElements: 16 << 20, maxDepth: 32 }

/**
 * An error reply (`-CODE message`). A value, not a thrown error: a pipelined reply stream
 * carries errors in order among the other replies. `code` is the first word.
 */
export class RespErrorReply {
  readonly code: string
  constructor(readonly message: string) {
    const sp = message.indexOf(' ')
    this.code = sp < 0 ? message : message.slice(0, sp)
  }
}

/** A RESP3 map (`%`), kept as ordered entries: keys may be byte strings. */
export class RespMap {
  constructor(readonly entries: readonly (readonly [RespValue, RespValue])[]) {}

  /** The value under a text key (bulk or simple string), or undefined. */
  get(key: string): RespValue | undefined {
    for (const [k, v] of this.entries) if (textOf(k) === key) return v
    return undefined
  }
}

/** A RESP3 verbatim string (`=`): its three-letter format ("txt", "mkd") and its bytes. */
export class RespVerbatim {
  constructor(
    readonly format: string,
    readonly text: Buffer,
  ) {}
}

export type RespValue = Buffer | string | number | bigint | boolean | null | RespErrorReply | RespMap | RespVerbatim | RespValue[]

/** Text of a bulk, simple or verbatim string; undefined for other types. */
export function textOf(v: RespValue | undefined): string | undefined {
  if (typeof v === 'string') return v
  if (Buffer.isBuffer(v)) return v.toString('utf8')
  if (v instanceof RespVerbatim) return v.text.toString('utf8')
  return undefined
}
