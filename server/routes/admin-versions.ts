import type { IncomingMessage, ServerResponse } from 'node:http'
import { isAbsolute } from 'node:path'
import { StoreError } from '../../common/errors'
import type { SwapResult } from '../../swapper/events'
import { requestVersion } from '../../swapper/disk/version-names'
import type { AppContext } from '../context'
import { badRequest, onlyFields, readJsonObject, sendJson } from '../http/http-util'
import { MAX_FETCH_BODY_BYTES, parsePartitionFetch } from './partition-fetch-body'
import { controlRoute } from './route'
import { knownStore } from './store-access'

/** Admin routes that change or list a store's versions: install, fetch, swap, rollback, delete. */
export const ADMIN_VERSION_ROUTES = [
  controlRoute({
    path: '/admin/stores/:store/versions',
    methods: ['GET'],
    access: 'admin',
    op: 'admin_versions',
    handle: (ctx, _req, res, p) => listVersions(ctx, p.store, res),
  }),
  controlRoute({
    path: '/admin/stores/:store/versions/:version',
    methods: ['DELETE'],
    access: 'admin',
    op: 'admin_delete',
    handle: (ctx, _req, res, p) => deleteVersion(ctx, p.store, p.version, res),
  }),
  controlRoute({
    path: '/admin/stores/:store/install',
    methods: ['POST'],
    access: 'admin',
    op: 'admin_install',
    handle: (ctx, req, res, p) => install(ctx, p.store, req, res),
  }),
  controlRoute({
    path: '/admin/stores/:store/fetch',
    methods: ['POST'],
    access: 'admin',
    op: 'admin_fetch',
    handle: (ctx, req, res, p) => fetch(ctx, p.store, req, res),
  }),
  controlRoute({
    path: '/admin/stores/:store/swap',
    methods: ['POST'],
    access: 'admin',
    op: 'admin_swap',
    handle: (ctx, req, res, p) => swap(ctx, p.store, req, res),
  }),
  controlRoute({
    path: '/admin/stores/:store/rollback',
    methods: ['POST'],
    access: 'admin',
    op: 'admin_rollback',
    handle: (ctx, req, res, p) => rollback(ctx, p.store, req, res),
  }),
]

/** A swap result as JSON: `from` is null (not missing) for a store's first swap. */
function swapJson(r: SwapResult): Record<string, unknown> {
  return { ...r, from: r.from ?? null, elapsedMs: round3(r.elapsedMs), flipMs: round3(r.flipMs) }
}

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000
}

function boolField(body: Record<string, unknown>, name: string): boolean {
  const v = body[name]
  if (v === undefined) return false
  if (typeof v !== 'boolean') throw badRequest(`${name} must be true or false`)
  return v
}

async function listVersions(ctx: AppContext, store: string, res: ServerResponse): Promise<void> {
  const sv = knownStore(ctx, store)
  sendJson(res, 200, { store, live: sv.liveVersion ?? null, versions: await sv.listVersions() })
}

async function install(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readJsonObject(req)
  onlyFields(body, ['path', 'swap', 'link'])
  const path = body['path']
  if (typeof path !== 'string' || path.length === 0 || path.length > 4096 || path.includes('\0')) {
    throw badRequest('path must be the absolute path of a node directory')
  }
  if (!isAbsolute(path)) throw badRequest('path must be absolute')
  const swapAfter = boolField(body, 'swap')
  const link = boolField(body, 'link')
  const job = ctx.jobs.start('install', store, async ({ signal, progress }) => {
    // The allow-list first, on the path with its symlinks resolved; that resolved path is
    // what gets copied, so a symlink changed afterwards cannot lead the copy elsewhere.
    const real = await ctx.sources.resolveInstallPath(path, signal)
    return ctx.storeCreation.use(store, async (sv) => {
      const installed = await sv.install(real, { link, signal, onProgress: progress })
      if (!swapAfter) return installed
      return { ...installed, swap: swapJson(await sv.swap(installed.version)) }
    })
  })
  sendJson(res, 202, job, { Location: `/admin/jobs/${job.id}` })
}

async function fetch(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readJsonObject(req, MAX_FETCH_BODY_BYTES)
  onlyFields(body, ['source', 'version', 'maxBytesPerSec', 'swap', 'lease', 'fetchFrom', 'peers', 'manifest'])
  if (!ctx.fetch) throw new StoreError('RO_CONFLICT', 'fetching is not available on this node')
  const source = body['source']
  const partitions = parsePartitionFetch(body, source !== undefined)
  if (
    (source !== undefined || partitions === undefined) &&
    (typeof source !== 'string' || source.length === 0 || source.length > 4096 || source.includes('\0'))
  ) {
    throw badRequest('source must be a path or URL of a build output')
  }
  const version = body['version'] === undefined ? undefined : requestVersion(body['version'])
  const rate = body['maxBytesPerSec']
  if (rate !== undefined && (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0)) {
    throw badRequest('maxBytesPerSec must be a positive number')
  }
  const swapAfter = boolField(body, 'swap')
  const lease = body['lease']
  if (lease !== undefined && (typeof lease !== 'string' || !LEASE_OWNER.test(lease)))
    throw badRequest('lease must be 1-128 characters of [A-Za-z0-9._:-]')
  if (lease !== undefined && ctx.pushLocks.holder(store) !== lease)
    throw new StoreError('RO_CONFLICT', `the push lease ${lease} is not held on store ${store}`)
  if (version !== undefined && ctx.dataDir.get(store)?.versions().includes(version)) {
    throw new StoreError('RO_CONFLICT', `store ${store} already has version ${version}`)
  }
  const runner = ctx.fetch
  const from = source as string | undefined
  const job = ctx.jobs.start(
    'fetch',
    store,
    async (jc) => {
      const { progress } = jc
      // A fetch for a push ends with the push's lease: a push whose process died (or whose
      // lease an operator broke) leaves no download running and no staged copy behind.
      const watch = lease === undefined ? undefined : watchLease(ctx, store, lease)
      const signal = watch === undefined ? jc.signal : AbortSignal.any([jc.signal, watch.signal])
      try {
        const fetched = await fetchVersion(signal, progress)
        const v = (fetched as { version?: unknown }).version
        if (lease !== undefined && typeof v === 'number') ctx.decisions?.noteFetched(store, lease, v)
        return fetched
      } finally {
        watch?.stop()
      }
    },
    version,
  )
  sendJson(res, 202, job, { Location: `/admin/jobs/${job.id}` })

  async function fetchVersion(signal: AbortSignal, progress: (p: unknown) => void): Promise<unknown> {
    // Validate before the store exists: a refused source creates nothing.
    if (from !== undefined) await ctx.sources.checkFetchSource(from, signal)
    return ctx.storeCreation.use(store, async (sv) => {
      const fetched = await runner({
        sv,
        ...(from === undefined ? {} : { source: from }),
        ...(partitions === undefined ? {} : { partitions }),
        version,
        maxBytesPerSec: rate as number | undefined,
        signal,
        onProgress: progress,
      })
      if (!swapAfter) return fetched
      return { ...fetched, swap: swapJson(await sv.swap(fetched.version)) }
    })
  }
}

const LEASE_OWNER = /^[A-Za-z0-9._:-]{1,128}$/
const LEASE_CHECK_MS = 1000

/** Aborts when `owner` no longer holds the store's push lease (lapsed, broken, or taken). */
function watchLease(ctx: AppContext, store: string, owner: string): { signal: AbortSignal; stop: () => void } {
  const lapsed = new AbortController()
  const timer = setInterval(() => {
    if (ctx.pushLocks.holder(store) === owner) return
    ctx.log.warn('fetch-lease-lapsed', { store, owner })
    lapsed.abort(new StoreError('RO_ABORTED', `the push lease ${owner} on store ${store} lapsed`))
    clearInterval(timer)
  }, LEASE_CHECK_MS)
  timer.unref()
  return { signal: lapsed.signal, stop: () => clearInterval(timer) }
}

async function swap(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readJsonObject(req)
  onlyFields(body, ['version'])
  const version = requestVersion(body['version'])
  const result = await knownStore(ctx, store).swap(version)
  sendJson(res, 200, swapJson(result))
}

async function rollback(ctx: AppContext, store: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readJsonObject(req)
  onlyFields(body, ['to'])
  const to = body['to'] === undefined || body['to'] === null ? undefined : requestVersion(body['to'], 'to')
  const result = await knownStore(ctx, store).rollback(to)
  sendJson(res, 200, swapJson(result))
}

async function deleteVersion(ctx: AppContext, store: string, version: number, res: ServerResponse): Promise<void> {
  await knownStore(ctx, store).deleteVersion(version)
  sendJson(res, 200, { store, deleted: version })
}
