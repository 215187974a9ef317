import type { IncomingMessage, ServerResponse } from 'node:http'
import { MAX_KEY_BYTES } from '../../formats/input/types'
import { StoreError } from '../../common/errors'
import { FRAMED_COLD } from '../../formats/store/read/store-reader-api'
import { MULTIGET_FRAMING } from '../../formats/store/chunk/value-framing'
import { decodeKeys, encodeTruncated, encodeValues, MAX_MULTIGET_BODY_BYTES, presentValues } from '../../formats/wire/multiget'
import type { ReaderLease } from '../../swapper/live-store'
import type { ServedStore } from '../../swapper/served-store'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import type { ReadContext } from '../context'
import { HttpStatusError, percentDecodeBytes, queryOf, readBody, sendJson } from '../http/http-util'
import { armSendTimeout, DEFAULT_READ_LIMITS, type ReadLimits } from '../http/read-limits'
import type { GrowableBuffer } from '../../common/growable-buffer'
import { ResponseBuffers } from '../http/response-buffers'
import { readRoute } from './route'
import { storedValuesHeaders, valuesModeOf, type ValuesMode } from '../../formats/wire/stored-values'
import { ownershipOf, ownsAll, ownsKey, type Ownership } from '../http/key-ownership'
import { checkServable, servedStore, noLiveVersion, sendMisdirected, VERSION_HEADER } from './store-access'

/** Most keys read per getMany call in a multi-get, between checks for back pressure. */
const MULTIGET_BATCH = 256
/** The first call's batch, before value sizes are known. */
const FIRST_BATCH = 32

const meanRecords = new WeakMap<StoreMetadata, number>()

/**
 * Mean bytes of a record in a version's data files: the first batch of a multi-get is sized
 * from it, so a batch of large values stays near one window even where each value read is
 * a copy (the pread reader) rather than a view of the mapping.
 */
function meanRecordBytes(meta: StoreMetadata): number {
  let mean = meanRecords.get(meta)
  if (mean === undefined) {
    const dataBytes = meta.files.filter((f) => f.name.endsWith('.data')).reduce((sum, f) => sum + f.size, 0)
    mean = meta.records > 0 ? dataBytes / meta.records : 0
    meanRecords.set(meta, mean)
  }
  return mean
}
/** Bodies of multi-get answers that fit one window, reused once sent (one pool per process). */
const BODIES = new ResponseBuffers()

/** The public read routes: store list, client metadata, single get, multi-get, the live version's dictionary. */
export const READ_ROUTES = [
  readRoute({ path: '/stores', methods: ['GET'], access: 'read', op: 'stores', handle: (ctx, _req, res) => listStores(ctx, res) }),
  readRoute({ path: '/stores/', methods: ['GET'], access: 'read', op: 'stores', handle: (ctx, _req, res) => listStores(ctx, res) }),
  readRoute({
    path: '/stores/:store',
    methods: ['GET'],
    access: 'read',
    op: 'metadata',
    handle: (ctx, _req, res, p) => storeMetadata(ctx, p.store, res),
  }),
  readRoute({
    path: '/stores/:store/keys/*key',
    methods: ['GET', 'HEAD'],
    access: 'read',
    op: 'get',
    handle: (ctx, req, res, p) => getKey(ctx, p.store, p.key, valuesMode(req), res),
  }),
  readRoute({
    path: '/stores/:store/multi-get',
    methods: ['POST'],
    access: 'read',
    op: 'multi_get',
    handle: (ctx, req, res, p) => multiGet(ctx, p.store, req, res),
  }),
  readRoute({
    path: '/stores/:store/dictionary',
    methods: ['GET', 'HEAD'],
    access: 'read',
    op: 'dictionary',
    handle: (ctx, _req, res, p) => dictionary(ctx, p.store, res),
  }),
]

/** `?values=stored` (formats/wire/stored-values.ts): values as the version stores them. */
function valuesMode(req: IncomingMessage): ValuesMode {
  return valuesModeOf(queryOf(req))
}

/**
 * The live version's zstd dictionary, for clients that decompress stored values
 * themselves; its checksum in DICTIONARY_HEADER, which the client compares with the one
 * its values named (a swap in between gives another). 404 RO_NOT_FOUND when the version
 * has none. The reader holds the bytes it checked when it opened the version: no I/O here.
 */
function dictionary(ctx: ReadContext, store: string, res: ServerResponse): void {
  const sv = servedStore(ctx, store)
  checkServable(sv)
  const lease = sv.live.acquire(() => res.destroy())
  if (!lease) throw noLiveVersion(sv)
  try {
    const stored = lease.reader.storedValues()
    if (stored.dictionary === undefined)
      throw new StoreError('RO_NOT_FOUND', `store ${store} version ${lease.version} has no zstd dictionary`)
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Length': stored.dictionary.bytes.length,
      [VERSION_HEADER]: String(lease.version),
      ...storedValuesHeaders(stored),
    })
    res.end(stored.dictionary.bytes)
    armSendTimeout(res, (ctx.readLimits ?? DEFAULT_READ_LIMITS).sendTimeoutMs)
  } finally {
    lease.release()
  }
}

function listStores(ctx: ReadContext, res: ServerResponse): void {
  sendJson(res, 200, {
    stores: ctx.stores.all().map((s) => ({ store: s.store, version: s.live.version ?? null, stale: s.stale !== undefined })),
  })
}

function storeMetadata(ctx: ReadContext, store: string, res: ServerResponse): void {
  const sv = servedStore(ctx, store)
  const lease = sv.live.acquire(() => res.destroy())
  if (!lease) throw noLiveVersion(sv)
  try {
    const m = lease.reader.metadata
    const own = m.layout.find((n) => n.id === ctx.nodeId)
    sendJson(
      res,
      200,
      {
        store: m.store,
        version: m.version,
        nodeId: ctx.nodeId,
        clusterName: m.clusterName,
        replication: m.replication,
        keySerializer: m.keySerializer,
        valueSerializer: m.valueSerializer,
        keyHash: m.keyHash,
        partitions: own?.partitions ?? [],
        layout: m.layout,
        nodes: layoutAddresses(ctx, m.layout),
        chunks: m.chunks,
        records: m.records,
        compression: m.compression,
        formatMajor: m.formatMajor,
        formatMinor: m.formatMinor,
        stale: sv.stale !== undefined,
        ...(sv.stale ? { staleReason: sv.stale.reason } : {}),
      },
      { [VERSION_HEADER]: String(m.version) },
    )
  } finally {
    lease.release()
  }
}

/**
 * Where the nodes of a version's layout listen, from this node's address book (its cluster
 * file plus the nodes a push handed it): a client given an older file finds new nodes here.
 */
function layoutAddresses(
  ctx: ReadContext,
  layout: StoreMetadata['layout'],
): { id: number; host: string; port: number; respPort?: number }[] {
  return layout.flatMap((l) => {
    const n = ctx.cluster.nodes.find((c) => c.id === l.id)
    if (!n) return []
    return [
      n.respPort === undefined ? { id: n.id, host: n.host, port: n.port } : { id: n.id, host: n.host, port: n.port, respPort: n.respPort },
    ]
  })
}

function getKey(ctx: ReadContext, store: string, rawKey: string, mode: ValuesMode, res: ServerResponse): Promise<void> | void {
  const sv = servedStore(ctx, store)
  if (rawKey.length > 3 * MAX_KEY_BYTES) throw new KeyTooLong()
  const key = percentDecodeBytes(rawKey)
  if (key.length > MAX_KEY_BYTES) throw new KeyTooLong()
  checkServable(sv)
  const lease = sv.live.acquire(() => res.destroy())
  if (!lease) throw noLiveVersion(sv)
  // Released once the response is done: this request reads one version only.
  res.once('close', lease.release)
  const own = ownershipOf(lease.reader.metadata)
  if (own instanceof Promise) return own.then((o) => answerGet(ctx, sv, lease, key, o, mode, res))
  return answerGet(ctx, sv, lease, key, own, mode, res)
}

function answerGet(
  ctx: ReadContext,
  sv: ServedStore,
  lease: ReaderLease,
  key: Uint8Array,
  own: Ownership,
  mode: ValuesMode,
  res: ServerResponse,
  warmed = false,
): Promise<void> | void {
  const store = sv.store
  // A key this node does not hold in its live version is not "absent": the client routed
  // by another layout (a version built for other nodes).
  if (!ownsKey(own, key)) return sendMisdirected(res, lease.reader.metadata, 'the key is')
  // A cold record is read on the libuv pool first: the event loop goes on meanwhile.
  const warming = warmed ? undefined : lease.reader.warm([key])
  // The lease is released when the response closes: a client gone meanwhile is not answered.
  if (warming) return warming.then(() => (res.destroyed ? undefined : answerGet(ctx, sv, lease, key, own, mode, res, true)))
  const limits = ctx.readLimits ?? DEFAULT_READ_LIMITS
  const value = readMany(sv, lease, [key], mode)[0]
  ctx.metrics.keys.inc({ store, result: value === undefined ? 'miss' : 'hit' })
  if (value === undefined) {
    res.writeHead(404, { [VERSION_HEADER]: String(lease.version), 'Content-Length': 0, 'Cache-Control': 'no-store' })
    res.end()
    return
  }
  if (value.length > limits.maxResponseBytes) throw tooLarge(value.length, limits)
  res.writeHead(200, {
    'Content-Type': 'application/octet-stream',
    'Content-Length': value.length,
    [VERSION_HEADER]: String(lease.version),
    ...(mode === 'stored' ? storedValuesHeaders(lease.reader.storedValues()) : {}),
  })
  res.end(value)
  // A big value the client does not take is not held for as long as TCP keeps trying.
  armSendTimeout(res, limits.sendTimeoutMs)
}

/** Lookups of one version; a read that finds damaged files is counted for /status before it fails. */
function readMany(sv: ServedStore, lease: ReaderLease, keys: readonly Uint8Array[], mode: ValuesMode): (Buffer | undefined)[] {
  const r = lease.reader
  try {
    if (mode === 'stored') return keys.length === 1 ? [r.getStored(keys[0] as Uint8Array)] : r.getManyStored(keys)
    return keys.length === 1 ? [r.get(keys[0] as Uint8Array)] : r.getMany(keys)
  } catch (err) {
    sv.noteReadFault(lease.version, err)
    throw err
  }
}

/**
 * Writes the framed multi-get answer into `sink`: its bytes, or (nothing written) -1 when it
 * does not fit in `maxBytes`, FRAMED_COLD when `ifResident` and a record is not in memory.
 */
function readFramed(
  sv: ServedStore,
  lease: ReaderLease,
  keys: readonly Uint8Array[],
  sink: GrowableBuffer,
  maxBytes: number,
  ifResident: boolean,
): number {
  try {
    return lease.reader.getManyFramedInto(keys, MULTIGET_FRAMING, sink, maxBytes, ifResident)
  } catch (err) {
    sv.noteReadFault(lease.version, err)
    throw err
  }
}

function tooLarge(bytes: number, limits: ReadLimits): StoreError {
  return new StoreError('RO_TOO_LARGE', `the value has ${bytes} bytes, more than this node's response limit of ${limits.maxResponseBytes}`)
}

/** A key longer than MAX_KEY_BYTES in a URL: 414 URI Too Long. */
class KeyTooLong extends HttpStatusError {
  constructor() {
    super(414, 'RO_TOO_LARGE', `the key is longer than ${MAX_KEY_BYTES} bytes`)
  }
}

/**
 * Values are read into a window of `windowBytes`, framed, written, and the next window is
 * read only once the socket has drained: a request holds at most about one window (and
 * one batch of values) of memory however many large values it names.
 * A response that fits in the first window goes out with a Content-Length, and any failure
 * before it gets a status. The body stops at `maxResponseBytes` with the end frame
 * (formats/wire/multiget.ts); the client asks for the other keys again.
 */
async function multiGet(ctx: ReadContext, store: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const mode = valuesMode(req)
  const sv = servedStore(ctx, store)
  checkServable(sv)
  const body = await readBody(
    req,
    MAX_MULTIGET_BODY_BYTES,
    ctx.requestBudget && { budget: ctx.requestBudget, res, onBusy: () => ctx.metrics.busyBodies.inc() },
  )
  const keys = decodeKeys(body)
  checkServable(sv)
  const lease = sv.live.acquire(() => res.destroy())
  if (!lease) throw noLiveVersion(sv)
  res.once('close', lease.release)
  // A multi-get names keys of this node only, in the live version's layout; one key of
  // another node makes the whole request misdirected (the client splits by that layout).
  const known = ownershipOf(lease.reader.metadata)
  const own = known instanceof Promise ? await known : known
  if (!ownsAll(own, keys)) return sendMisdirected(res, lease.reader.metadata, 'some keys are')
  const limits = ctx.readLimits ?? DEFAULT_READ_LIMITS
  // The end frame always fits: the values stop 4 bytes short of the limit.
  const budget = limits.maxResponseBytes - 4
  const headers = {
    'Content-Type': 'application/octet-stream',
    [VERSION_HEADER]: String(lease.version),
    'X-Rostore-Keys': String(keys.length),
    'Cache-Control': 'no-store',
    ...(mode === 'stored' ? storedValuesHeaders(lease.reader.storedValues()) : {}),
  }
  // The common case, an answer that fits in one window: the reader frames every value
  // straight from the mapping into a reused body (no Buffer per value, none per answer).
  if (keys.length <= MULTIGET_BATCH && mode === 'plain') {
    const sink = BODIES.acquire()
    let framed: boolean
    try {
      let n = readFramed(sv, lease, keys, sink, Math.min(limits.windowBytes, budget), true)
      if (n === FRAMED_COLD) {
        // Every cold record of the request is read on the pool at once, then all are framed.
        await lease.reader.warm(keys)
        if (res.destroyed) return BODIES.release(sink)
        n = readFramed(sv, lease, keys, sink, Math.min(limits.windowBytes, budget), false)
      }
      framed = n >= 0
    } catch (err) {
      BODIES.release(sink)
      throw err
    }
    if (framed) {
      const body = sink.bytes()
      const found = presentValues(body, keys.length)
      res.writeHead(200, { ...headers, 'Content-Length': body.length })
      res.once('finish', () => BODIES.release(sink))
      res.end(body)
      armSendTimeout(res, limits.sendTimeoutMs)
      ctx.metrics.keys.inc({ store, result: 'hit' }, found)
      ctx.metrics.keys.inc({ store, result: 'miss' }, keys.length - found)
      return
    }
    BODIES.release(sink)
  }
  let next = 0
  let hits = 0
  let bodyBytes = 0
  let truncated = false
  /** The next window of values; sets `truncated` when the limit stops it. */
  const readWindow = async (): Promise<(Buffer | undefined)[]> => {
    const values: (Buffer | undefined)[] = []
    let windowBytes = 0
    let full = false
    while (next < keys.length && !full && !truncated) {
      // Batched lookups (one call into the reader for many keys), sized from the values
      // seen so far so that a batch of large values stays near the window.
      const avgFrame = next === 0 ? 0 : bodyBytes / next
      const room = limits.windowBytes - windowBytes
      const expected = next === 0 ? meanRecordBytes(lease.reader.metadata) : avgFrame
      const n = Math.max(1, Math.min(next === 0 ? FIRST_BATCH : MULTIGET_BATCH, Math.floor(room / Math.max(expected, 1))))
      const batch = keys.slice(next, next + n)
      const warming = lease.reader.warm(batch)
      if (warming) await warming
      if (res.destroyed) break
      for (const value of readMany(sv, lease, batch, mode)) {
        const frame = 4 + (value?.length ?? 0)
        if (bodyBytes + frame > budget) {
          if (next === 0) throw tooLarge(value?.length ?? 0, limits)
          truncated = true
          break
        }
        // A batch may name more than a window of large values: the window goes out first,
        // and the rest of the batch is looked up again for the next one.
        if (windowBytes > 0 && windowBytes + frame > limits.windowBytes) {
          full = true
          break
        }
        values.push(value)
        if (value !== undefined) hits++
        windowBytes += frame
        bodyBytes += frame
        next++
      }
      if (windowBytes >= limits.windowBytes) full = true
    }
    return values
  }
  const frames = (values: (Buffer | undefined)[], last: boolean): Buffer =>
    last && truncated ? Buffer.concat([encodeValues(values), encodeTruncated()]) : encodeValues(values)

  const first = await readWindow()
  if (next >= keys.length || truncated) {
    const out = frames(first, true)
    res.writeHead(200, { ...headers, 'Content-Length': out.length })
    res.end(out)
    armSendTimeout(res, limits.sendTimeoutMs)
  } else {
    armSendTimeout(res, limits.sendTimeoutMs)
    res.writeHead(200, headers)
    let values = first
    for (;;) {
      const last = next >= keys.length || truncated
      res.write(frames(values, last))
      if (last || res.destroyed) break
      // The send timeout armed above cuts a client that stops reading: 'close' ends the wait.
      if (res.writableNeedDrain) await drainOrClose(res)
      if (res.destroyed) break
      values = await readWindow()
    }
    res.end()
  }
  ctx.metrics.keys.inc({ store, result: 'hit' }, hits)
  ctx.metrics.keys.inc({ store, result: 'miss' }, next - hits)
}

function drainOrClose(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done)
      res.off('close', done)
      resolve()
    }
    res.once('drain', done)
    res.once('close', done)
  })
}
