import { once } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { StoreError, isStoreError } from '../../common/errors'
import { buildRing } from '../../cluster/routing'
import { heldPartitionsOf } from '../../formats/store/layout/held-partitions'
import { openVersion, walkBatches, type OpenVersion } from '../../formats/store/scan/partition-walk'
import { slotCount } from '../../formats/store/layout/slots'
import { DUMP_CONTENT_TYPES, DumpEncoder, DUMP_FORMATS, type DumpFraming } from '../../formats/wire/dump-frames'
import { TokenBucket } from '../../fetcher/transfer/token-bucket'
import { parseVersionText } from '../../swapper/disk/version-names'
import { checkAdminOrRead } from '../auth'
import type { AppContext } from '../context'
import { badRequest, queryOf } from '../http/http-util'
import { DEFAULT_READ_LIMITS } from '../http/read-limits'
import { controlRoute } from './route'
import { storedValuesHeaders, valuesModeOf, type ValuesMode } from '../../formats/wire/stored-values'
import { readDictionary } from '../../formats/store/chunk/dictionary-file'
import { knownStore } from './store-access'

/**
 * Streaming a store version out (docs/API.md "Streaming a store out"): every entry, or
 * every key, of chosen master partitions, in file order, in the framing of
 * formats/wire/dump-frames.ts. Control routes: they run where the versions live, so one
 * token bucket (`--stream-max-bytes-per-sec`) limits every stream of the node.
 */
export const STREAM_ROUTES = [
  controlRoute({
    path: '/admin/stores/:store/dump/entries',
    methods: ['GET'],
    access: 'admin',
    op: 'dump_entries',
    handle: (ctx, req, res, p) => streamDump(ctx, p.store, req, res, false),
  }),
  controlRoute({
    path: '/admin/stores/:store/dump/keys',
    methods: ['GET'],
    access: 'admin',
    op: 'dump_keys',
    handle: (ctx, req, res, p) => streamDump(ctx, p.store, req, res, true),
  }),
  controlRoute({
    path: '/admin/stores/:store/dump/dictionary',
    methods: ['GET'],
    access: 'admin',
    op: 'dump_dictionary',
    handle: (ctx, req, res, p) => dumpDictionary(ctx, p.store, req, res),
  }),
]

/**
 * Who may stream a store out: the admin token, or the read token where reads are
 * protected (the request handler applies the same rule before routing /admin paths).
 */
function checkStreamAccess(ctx: AppContext, req: IncomingMessage): void {
  checkAdminOrRead(req, ctx.auth, ctx.readAuth)
}

/** Bytes of frames gathered before they are throttled and written as one piece. */
const WRITE_BATCH = 64 << 10
/**
 * The same for a throttled stream, and the record walk's batch: the CPU burst a stream
 * takes between two throttle waits. Live reads that meet a burst on a core the serving
 * processes share wait for it (RESULTS section 4d); a throttled stream has time for
 * smaller steps.
 */
const THROTTLED_WRITE_BATCH = 16 << 10

interface StreamQuery {
  readonly version: number | undefined
  readonly partitions: number[] | undefined
  readonly framing: DumpFraming
  readonly maxBytesPerSec: number | undefined
  /** Only this chunk: one run sorted by hash prefix (diffs merge such runs). */
  readonly chunk: number | undefined
  /** 'stored': values as the version stores them (formats/wire/stored-values.ts). */
  readonly values: ValuesMode
}

/** The `version` parameter, or undefined without one; RO_BAD_REQUEST when it is not a version number. */
function versionParam(params: URLSearchParams): number | undefined {
  const text = params.get('version')
  if (text === null) return undefined
  const version = parseVersionText(text)
  if (version === undefined) throw badRequest('version must be a positive integer')
  return version
}

function parseQuery(req: IncomingMessage): StreamQuery {
  const params = queryOf(req, ['version', 'partitions', 'format', 'maxBytesPerSec', 'chunk', 'values'])
  const version = versionParam(params)
  const partsText = params.get('partitions')
  let partitions: number[] | undefined
  if (partsText !== null) {
    partitions = partsText.split(',').map((t) => {
      if (!/^(0|[1-9][0-9]{0,8})$/.test(t)) throw badRequest('partitions must be a comma-separated list of partition ids')
      return Number(t)
    })
  }
  const format = params.get('format') ?? 'binary'
  if (!(DUMP_FORMATS as readonly string[]).includes(format)) throw badRequest(`format must be ${DUMP_FORMATS.join(' or ')}`)
  const rateText = params.get('maxBytesPerSec')
  const rate = rateText === null ? undefined : Number(rateText)
  if (rate !== undefined && (!Number.isFinite(rate) || rate <= 0)) throw badRequest('maxBytesPerSec must be a positive number')
  const chunkText = params.get('chunk')
  if (chunkText !== null && !/^(0|[1-9][0-9]{0,8})$/.test(chunkText)) throw badRequest('chunk must be a chunk number')
  const chunk = chunkText === null ? undefined : Number(chunkText)
  return { version, partitions, framing: format as DumpFraming, maxBytesPerSec: rate, chunk, values: valuesModeOf(params) }
}

async function streamDump(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse, keysOnly: boolean): Promise<void> {
  checkStreamAccess(ctx, req)
  const query = parseQuery(req)
  const sv = knownStore(ctx, store)
  let version = query.version
  if (version === undefined) {
    if (sv.stale) throw new StoreError('RO_UNAVAILABLE', `store ${store} is marked stale on this node: ${sv.stale.reason}`)
    version = sv.liveVersion
    if (version === undefined) throw new StoreError('RO_UNAVAILABLE', `store ${store} has no live version on this node`)
  }
  const meta = await sv.versionMetadata(version)
  // Format 2 lists what the directory holds; format 1 holds what the layout gives this node.
  const held = heldPartitionsOf(meta, ctx.nodeId)
  const wanted = query.partitions ?? held
  const missing = wanted.filter((p) => !held.includes(p))
  if (missing.length > 0) {
    throw new StoreError(
      'RO_BAD_REQUEST',
      `node ${ctx.nodeId} does not hold partition${missing.length > 1 ? 's' : ''} ${missing.slice(0, 20).join(', ')} of store ${store} version ${version}; it holds ${held.join(', ')}`,
    )
  }
  // Format 2: the chunks of a stream are the directory's chunk slots (held partitions × chunks).
  const chunks = slotCount(meta)
  if (query.chunk !== undefined && query.chunk >= chunks) {
    throw new StoreError('RO_BAD_REQUEST', `store ${store} version ${version} has chunks 0..${chunks - 1}, not ${query.chunk}`)
  }
  let opened: OpenVersion
  try {
    opened = await openVersion(sv.versionDir(version), meta)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new StoreError('RO_NOT_FOUND', `version ${version} of store ${store} was deleted meanwhile; ask again`)
    }
    throw err
  }
  const ac = new AbortController()
  // 'close' comes when the response is done or the client went away: either way, stop.
  res.once('close', () => ac.abort())
  const sendTimeoutMs = (ctx.readLimits ?? DEFAULT_READ_LIMITS).sendTimeoutMs
  const own = query.maxBytesPerSec === undefined ? undefined : new TokenBucket(query.maxBytesPerSec)
  const writeBatch = own || ctx.streamBucket ? THROTTLED_WRITE_BATCH : WRITE_BATCH
  const estimate = held.length === 0 ? 0 : Math.round((meta.records * new Set(wanted).size) / held.length)
  try {
    res.writeHead(200, {
      'Content-Type': DUMP_CONTENT_TYPES[query.framing],
      'Cache-Control': 'no-store',
      'X-Rostore-Version': String(version),
      'X-Rostore-Key-Serializer': meta.keySerializer,
      'X-Rostore-Value-Serializer': meta.valueSerializer,
      'X-Rostore-Estimated-Records': String(estimate),
      'X-Rostore-Chunks': String(chunks),
      ...(query.values === 'stored' ? storedValuesHeaders(meta) : {}),
    })
    const enc = new DumpEncoder(query.framing)
    let batch: Buffer[] = []
    let batchBytes = 0
    const flush = async (): Promise<void> => {
      if (batchBytes === 0) return
      const out = batch.length === 1 ? (batch[0] as Buffer) : Buffer.concat(batch, batchBytes)
      batch = []
      batchBytes = 0
      // Pieces of at most writeBatch: a 1 MiB value is paid for and sent in steps, so
      // the socket sees a smooth stream and a slow limit never waits seconds at once.
      for (let at = 0; at < out.length; at += writeBatch) {
        const piece = out.length <= writeBatch ? out : out.subarray(at, Math.min(out.length, at + writeBatch))
        if (own) await own.take(piece.length, ac.signal)
        if (ctx.streamBucket) await ctx.streamBucket.take(piece.length, ac.signal)
        if (!res.write(piece)) await drained(res, ac, sendTimeoutMs)
      }
    }
    const walk = walkBatches(opened, {
      partitions: new Set(wanted),
      partitionCount: buildRing(meta.layout).partitionCount,
      values: !keysOnly,
      stored: query.values === 'stored',
      chunk: query.chunk,
      batchBytes: writeBatch,
      signal: ac.signal,
    })
    for await (const b of walk) {
      const frames = [...(b.first ? [enc.chunk(b.chunk)] : []), ...(b.count > 0 ? [enc.many(b, keysOnly)] : [])]
      for (const frame of frames) {
        batch.push(frame)
        batchBytes += frame.length
      }
      if (batchBytes >= writeBatch) await flush()
    }
    await flush()
    res.end(enc.end({ store, version, partitions: wanted }))
  } catch (err) {
    // The client went away: nothing to answer, and nothing went wrong on this node.
    if (ac.signal.aborted && (isAbort(err) || isStoreError(err, 'RO_ABORTED'))) return
    throw err
  } finally {
    await opened.close()
  }
}

/**
 * The zstd dictionary of a version the node holds (the live one by default, `?version=V`
 * another kept one), for a dump of stored values: checked against its checksum as it is
 * read, its checksum in DICTIONARY_HEADER. 404 RO_NOT_FOUND when the version has none.
 */
async function dumpDictionary(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  checkStreamAccess(ctx, req)
  const params = queryOf(req, ['version'])
  const sv = knownStore(ctx, store)
  const version = versionParam(params) ?? sv.liveVersion
  if (version === undefined) throw new StoreError('RO_UNAVAILABLE', `store ${store} has no live version on this node`)
  const meta = await sv.versionMetadata(version)
  if (meta.dictionary === undefined) throw new StoreError('RO_NOT_FOUND', `store ${store} version ${version} has no zstd dictionary`)
  let bytes: Buffer
  try {
    bytes = await readDictionary(sv.versionDir(version), meta.dictionary)
  } catch (err) {
    // The reason goes to the node's log; the answer names no path.
    ctx.log.warn('dump_dictionary_failed', { store, version, error: (err as Error).message })
    throw new StoreError(
      isStoreError(err) ? err.code : 'RO_IO',
      `the dictionary of store ${store} version ${version} cannot be read on this node`,
    )
  }
  res.writeHead(200, {
    'Content-Type': 'application/octet-stream',
    'Content-Length': bytes.length,
    'Cache-Control': 'no-store',
    'X-Rostore-Version': String(version),
    ...storedValuesHeaders(meta),
  })
  res.end(bytes)
}

/**
 * Waits until the client took what was written. One that takes nothing for `ms`
 * (--send-timeout-ms) is cut, as a read response would be: a stopped client must not pin
 * a version's files and a stream's buffers for ever. Only this wait is timed, not the
 * throttle's, so a slow limit never looks like a stalled client.
 */
export async function drained(res: ServerResponse, ac: AbortController, ms: number): Promise<void> {
  // A timer of our own, not AbortSignal.timeout(): inside AbortSignal.any() a timeout
  // signal can be collected before it fires (nodejs/node#57736), and then a stopped client
  // held the stream and its files for ever (seen once in a CI run, 20 s and counting).
  const timeout = new AbortController()
  const timer = setTimeout(() => timeout.abort(), ms)
  try {
    await once(res, 'drain', { signal: AbortSignal.any([ac.signal, timeout.signal]) })
  } catch (err) {
    if (!ac.signal.aborted) {
      res.destroy()
      ac.abort()
    }
    throw err
  } finally {
    clearTimeout(timer)
  }
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError'
}
