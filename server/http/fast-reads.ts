import { GrowableBuffer } from '../../common/growable-buffer'
import { FRAMED_COLD, type ServingReader } from '../../formats/store/read/store-reader-api'
import { MULTIGET_FRAMING } from '../../formats/store/chunk/value-framing'
import { decodeKeys, presentValues } from '../../formats/wire/multiget'
import type { ServedStore } from '../../swapper/served-store'
import type { ReadContext } from '../context'
import { HANDOFF, HEAD, POST, type FastRequest } from './fast-request'
import { writeAbsent, writeBytes, writeMultiGetHead, writeValue } from './fast-response'
import { ownershipOf, ownsAll, ownsKey } from './key-ownership'
import { DEFAULT_READ_LIMITS } from './read-limits'

/** What answering one parsed request needs from its connection. */
export interface FastAnswer {
  readonly ctx: ReadContext
  readonly req: FastRequest
  /** The request's bytes (the multi-get body among them). */
  buf: Buffer
  /** The byte after the request. */
  end: number
  out: GrowableBuffer
  /** Keep-Alive timeout in seconds, for the responses' header. */
  readonly keepAliveS: number
  /** Cuts the connection (a revoked lease). */
  readonly destroy: () => void
  /** rostore_keys_read_total of a store. */
  readonly countKeys: (store: string, hits: number, misses: number) => void
}

/** An answer that waited for the pool: its status and bytes, or HANDOFF. */
export interface LaterAnswer {
  readonly status: number
  readonly bytes: Buffer
}

/**
 * Answers a parsed read into `a.out`: its status (200, 404), HANDOFF for anything today's routes must
 * answer (every error: unknown or stale store, no live version, a missing or wrong read
 * token, a misdirected key, a malformed body, a read fault, a value larger than one read
 * window), or a promise of either where a cold record must be warmed on the pool first or
 * the version's key ownership is not loaded yet. Nothing is written for a HANDOFF.
 */
export function answerRead(a: FastAnswer): number | Promise<LaterAnswer> {
  const { ctx, req } = a
  const sv = ctx.stores.get(req.store)
  if (!sv || sv.stale !== undefined) return HANDOFF
  if (ctx.readAuth.enabled && !ctx.readAuth.accepts(req.authorization)) return HANDOFF
  const reader = sv.live.currentReader
  if (!reader) return HANDOFF
  let keys: Buffer[]
  if (req.method === POST) {
    try {
      keys = decodeKeys(a.buf.subarray(req.bodyStart, a.end))
    } catch {
      return HANDOFF
    }
  } else {
    keys = [req.key]
  }
  const own = ownershipOf(reader.metadata)
  if (own instanceof Promise) return answerLater(a, sv, keys)
  if (!(req.method === POST ? ownsAll(own, keys) : ownsKey(own, req.key))) return HANDOFF
  const answered = answerFrom(a, sv, reader, keys, true)
  return answered === undefined ? answerLater(a, sv, keys) : answered
}

/**
 * The same answer once the version's ownership is loaded and its cold records warmed, under
 * a lease; written into a buffer of its own, as other connections use the shared output meanwhile.
 */
async function answerLater(a: FastAnswer, sv: ServedStore, keys: readonly Buffer[]): Promise<LaterAnswer> {
  const out = new GrowableBuffer(4096)
  const handOff = { status: HANDOFF, bytes: out.buf.subarray(0, 0) }
  const lease = sv.live.acquire(a.destroy)
  if (!lease) return handOff
  try {
    const own = await ownershipOf(lease.reader.metadata)
    if (!(a.req.method === POST ? ownsAll(own, keys) : ownsKey(own, a.req.key))) return handOff
    await lease.reader.warm(keys)
    const status = answerFrom({ ...a, out }, sv, lease.reader, keys, false) ?? HANDOFF
    return { status, bytes: out.bytes() }
  } catch {
    return handOff
  } finally {
    lease.release()
  }
}

/** Multi-get bodies are framed here, then copied after their head (whose length they give). */
let scratch: GrowableBuffer | undefined

/** undefined when `ifResident` and a record is cold. */
function answerFrom(
  a: FastAnswer,
  sv: ServedStore,
  reader: ServingReader,
  keys: readonly Buffer[],
  ifResident: boolean,
): number | undefined {
  const { ctx, req, out } = a
  const limits = ctx.readLimits ?? DEFAULT_READ_LIMITS
  const version = reader.metadata.version
  const store = sv.store
  if (req.method !== POST) {
    if (ifResident && reader.warm(keys) !== undefined) return undefined
    let value: Buffer | undefined
    try {
      value = reader.get(req.key)
    } catch {
      // Read again by today's route, which counts the fault for /status and answers it.
      return HANDOFF
    }
    if (value !== undefined && value.length > Math.min(limits.windowBytes, limits.maxResponseBytes)) return HANDOFF
    if (value === undefined) a.countKeys(store, 0, 1)
    else a.countKeys(store, 1, 0)
    if (value === undefined) {
      writeAbsent(out, version, req.close, a.keepAliveS)
      return 404
    }
    writeValue(out, version, value, req.method === HEAD, req.close, a.keepAliveS)
    return 200
  }
  const sink = (scratch ??= new GrowableBuffer(16 << 10))
  sink.pos = 0
  let n: number
  try {
    n = reader.getManyFramedInto(keys, MULTIGET_FRAMING, sink, Math.min(limits.windowBytes, limits.maxResponseBytes - 4), ifResident)
  } catch {
    return HANDOFF
  }
  if (n === FRAMED_COLD) return undefined
  // Larger than one window: today's route sends it window by window as the client takes it.
  if (n < 0) return HANDOFF
  const found = presentValues(sink.buf.subarray(0, n), keys.length)
  a.countKeys(store, found, keys.length - found)
  writeMultiGetHead(out, version, keys.length, n, req.close, a.keepAliveS)
  writeBytes(out, sink.buf.subarray(0, n))
  // A large body is not kept for the next request.
  if (sink.buf.length > 1 << 20) scratch = undefined
  return 200
}
