import type { IncomingMessage, ServerResponse } from 'node:http'
import { MAX_KEY_BYTES } from '../../formats/input/types'
import { decodeKeys, encodeValues, MAX_MULTIGET_BODY_BYTES } from '../../formats/wire/multiget'
import type { ReadContext } from '../context'
import { HttpStatusError, percentDecodeBytes, readBody, sendJson } from '../http-util'
import { readRoute } from './route'
import { checkServable, servedStore, noLiveVersion, VERSION_HEADER } from './store-access'

/** Keys read per getMany call in a multi-get, between checks for back pressure. */
const MULTIGET_BATCH = 256

/** The public read routes: store list, client metadata, single get, multi-get. */
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
    handle: (ctx, _req, res, p) => getKey(ctx, p.store, p.key, res),
  }),
  readRoute({
    path: '/stores/:store/multi-get',
    methods: ['POST'],
    access: 'read',
    op: 'multi_get',
    handle: (ctx, req, res, p) => multiGet(ctx, p.store, req, res),
  }),
]

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
        partitions: own?.partitions ?? ctx.cluster.nodes.find((n) => n.id === ctx.nodeId)?.partitions ?? [],
        layout: m.layout,
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

function getKey(ctx: ReadContext, store: string, rawKey: string, res: ServerResponse): void {
  const sv = servedStore(ctx, store)
  if (rawKey.length > 3 * MAX_KEY_BYTES) throw new KeyTooLong()
  const key = percentDecodeBytes(rawKey)
  if (key.length > MAX_KEY_BYTES) throw new KeyTooLong()
  checkServable(sv)
  const lease = sv.live.acquire(() => res.destroy())
  if (!lease) throw noLiveVersion(sv)
  // Released once the response is done: this request reads one version only.
  res.once('close', lease.release)
  const value = lease.reader.get(key)
  ctx.metrics.keys.inc({ store, result: value === undefined ? 'miss' : 'hit' })
  if (value === undefined) {
    res.writeHead(404, { [VERSION_HEADER]: String(lease.version), 'Content-Length': 0, 'Cache-Control': 'no-store' })
    res.end()
    return
  }
  res.writeHead(200, {
    'Content-Type': 'application/octet-stream',
    'Content-Length': value.length,
    [VERSION_HEADER]: String(lease.version),
  })
  res.end(value)
}

/** A key longer than MAX_KEY_BYTES in a URL: 414 URI Too Long. */
class KeyTooLong extends HttpStatusError {
  constructor() {
    super(414, 'RO_TOO_LARGE', `the key is longer than ${MAX_KEY_BYTES} bytes`)
  }
}

async function multiGet(ctx: ReadContext, store: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const sv = servedStore(ctx, store)
  checkServable(sv)
  const body = await readBody(req, MAX_MULTIGET_BODY_BYTES)
  const keys = decodeKeys(body)
  checkServable(sv)
  const lease = sv.live.acquire(() => res.destroy())
  if (!lease) throw noLiveVersion(sv)
  res.once('close', lease.release)
  let hits = 0
  const count = (vs: readonly (Buffer | undefined)[]): void => {
    for (const v of vs) if (v !== undefined) hits++
  }
  // The first batch is read before the status line, so most failures still get a status.
  // Each batch goes out as one buffer: a write per value costs more than the lookups.
  let values = lease.reader.getMany(keys.slice(0, MULTIGET_BATCH))
  count(values)
  const headers = {
    'Content-Type': 'application/octet-stream',
    [VERSION_HEADER]: String(lease.version),
    'X-Rostore-Keys': String(keys.length),
    'Cache-Control': 'no-store',
  }
  if (keys.length <= MULTIGET_BATCH) {
    const bodyOut = encodeValues(values)
    res.writeHead(200, { ...headers, 'Content-Length': bodyOut.length })
    res.end(bodyOut)
  } else {
    res.writeHead(200, headers)
    for (let at = 0; ;) {
      res.write(encodeValues(values))
      at += values.length
      if (at >= keys.length || res.destroyed) break
      if (res.writableNeedDrain) await drainOrClose(res)
      if (res.destroyed) break
      values = lease.reader.getMany(keys.slice(at, at + MULTIGET_BATCH))
      count(values)
    }
    res.end()
  }
  ctx.metrics.keys.inc({ store, result: 'hit' }, hits)
  ctx.metrics.keys.inc({ store, result: 'miss' }, keys.length - hits)
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
