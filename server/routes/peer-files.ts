import { constants } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { isStoreError, StoreError } from '../../common/errors'
import type { AppContext } from '../context'
import { DEFAULT_READ_LIMITS } from '../http/read-limits'
import { controlRoute } from './route'
import { drained } from './stream-dump'

/**
 * The peer file route (docs/API.md "Peer file transfer"): one file of a format-2 version
 * this node holds, or of one it is fetching once that file is verified, so the replicas of
 * a partition can take it from each other instead of from the build output.
 */
export const PEER_FILE_ROUTES = [
  controlRoute({
    path: '/admin/stores/:store/versions/:version/files/:file',
    methods: ['GET'],
    access: 'admin',
    op: 'admin_peer_file',
    handle: (ctx, req, res, p) => servePeerFile(ctx, p.store, p.version, p.file, req, res),
  }),
]

/** Bytes read and sent at once: small enough that a throttled stream is smooth. */
const PIECE = 64 << 10
/** Never blocks on a FIFO; never follows a symbolic link put in place of a file. */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW

/** Where the file is: an installed version's directory, or a fetch under way (then a missing file is "not ready"). */
function locate(ctx: AppContext, store: string, version: number, file: string): { dir: string; fetching: boolean } {
  const sv = ctx.dataDir.get(store)
  if (sv?.versions().includes(version)) return { dir: sv.versionDir(version), fetching: false }
  const f = ctx.fetching?.get(store, version)
  if (f !== undefined) {
    if (!f.names.has(file)) throw new StoreError('RO_NOT_FOUND', `version ${version} of store ${store} on this node holds no file ${file}`)
    return { dir: f.dir, fetching: true }
  }
  throw new StoreError('RO_NOT_FOUND', `store ${store} has no version ${version} on this node`)
}

async function openFile(ctx: AppContext, store: string, version: number, file: string): Promise<{ fh: FileHandle; size: number }> {
  // Twice at most: a fetch that ends between the look-up and the open has renamed its directory.
  for (let attempt = 0; ; attempt++) {
    const where = locate(ctx, store, version, file)
    let fh: FileHandle
    try {
      fh = await open(join(where.dir, file), OPEN_FLAGS)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' && where.fetching && attempt === 0) {
        if (ctx.fetching?.get(store, version) === undefined) continue
        throw new StoreError('RO_NOT_READY', `version ${version} of store ${store} is being fetched; ${file} is not verified yet`)
      }
      if (code === 'ENOENT' && attempt === 0 && !where.fetching) {
        throw new StoreError('RO_NOT_FOUND', `version ${version} of store ${store} on this node holds no file ${file}`)
      }
      if (code === 'ENOENT') throw new StoreError('RO_NOT_FOUND', `version ${version} of store ${store} is gone from this node`)
      if (code === 'ELOOP') throw new StoreError('RO_NOT_FOUND', `version ${version} of store ${store} on this node holds no file ${file}`)
      // The message names no path: a peer learns nothing of this node's directories.
      throw new StoreError('RO_IO', `reading ${file} of store ${store} version ${version} failed (${code ?? 'error'})`)
    }
    const st = await fh.stat()
    if (!st.isFile()) {
      await fh.close()
      throw new StoreError('RO_NOT_FOUND', `version ${version} of store ${store} on this node holds no file ${file}`)
    }
    return { fh, size: st.size }
  }
}

/** `bytes=a-` or `bytes=a-b` → [first, last] within `size`; undefined: the whole file; 'bad': unsatisfiable. */
export function parseRange(header: string | undefined, size: number): { first: number; last: number } | undefined | 'bad' {
  if (header === undefined) return undefined
  const m = /^bytes=(\d{1,15})-(\d{0,15})$/.exec(header.trim())
  // Several ranges, suffix ranges: answered with the whole file, which HTTP allows.
  if (!m) return undefined
  const first = Number(m[1])
  const last = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
  if (first >= size || last < first) return 'bad'
  return { first, last }
}

async function servePeerFile(
  ctx: AppContext,
  store: string,
  version: number,
  file: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const release = ctx.peerEgress?.open() ?? ((): void => undefined)
  let fh: FileHandle | undefined
  const ac = new AbortController()
  try {
    const opened = await openFile(ctx, store, version, file)
    fh = opened.fh
    const range = parseRange(req.headers.range, opened.size)
    if (range === 'bad') {
      res.writeHead(416, { 'Content-Range': `bytes */${opened.size}`, 'Cache-Control': 'no-store' })
      res.end()
      return
    }
    const first = range?.first ?? 0
    const last = range?.last ?? opened.size - 1
    res.writeHead(range === undefined ? 200 : 206, {
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(last - first + 1),
      'Accept-Ranges': 'bytes',
      'Cache-Control': 'no-store',
      ...(range === undefined ? {} : { 'Content-Range': `bytes ${first}-${last}/${opened.size}` }),
    })
    res.once('close', () => ac.abort())
    const sendTimeoutMs = (ctx.readLimits ?? DEFAULT_READ_LIMITS).sendTimeoutMs
    const bucket = ctx.peerEgress?.bucket
    for (let pos = first; pos <= last && !ac.signal.aborted;) {
      const want = Math.min(PIECE, last - pos + 1)
      const buf = Buffer.allocUnsafe(want)
      const { bytesRead } = await fh.read(buf, 0, want, pos)
      // The file shrank under us (it never should): cut the answer, the peer's checksum decides.
      if (bytesRead === 0) {
        res.destroy()
        return
      }
      pos += bytesRead
      if (bucket) await bucket.take(bytesRead, ac.signal)
      ctx.peerEgress?.sent(bytesRead)
      if (!res.write(bytesRead === want ? buf : buf.subarray(0, bytesRead))) await drained(res, ac, sendTimeoutMs)
    }
    res.end()
  } catch (err) {
    // The peer went away or stopped reading: nothing to answer.
    if (res.headersSent) {
      if (!(ac.signal.aborted || isStoreError(err, 'RO_ABORTED') || (err as Error).name === 'AbortError'))
        ctx.log.warn('peer-file-failed', { store, version, file })
      res.destroy()
      return
    }
    throw err
  } finally {
    release()
    await fh?.close().catch(() => undefined)
  }
}
