import { constants } from 'node:fs'
import { open, readlink, realpath, type FileHandle } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { StoreError } from '../../common/errors'
import { ReadBehind } from '../../common/read-behind'
import { FsGate } from '../transfer/fs-gate'
import { isInsideDir } from './local-path'
import type { FetchSource, ReadRequest, ReadResult } from './source'

/** The file-system calls a FileSource makes; tests replace `open` to stand for a hung mount. */
export interface FileSourceCalls {
  readonly realpath: (path: string) => Promise<string>
  readonly open: (path: string, flags: number) => Promise<FileHandle>
}

export interface FileSourceOptions {
  /** The root with its symlinks resolved, as the allow-list check saw it; default: resolved at the first read. */
  readonly realRoot?: string
  /** The node-wide gate; this source takes one call at a time under it. Default: a gate of its own. */
  readonly gate?: FsGate
  readonly calls?: FileSourceCalls
}

const CHUNK = 1 << 20
/** Never blocks on a FIFO or device (the check that it is a regular file comes right after). */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW
const NEVER = new AbortController().signal
const DEFAULT_CALLS: FileSourceCalls = { realpath: (p) => realpath(p), open: (p, flags) => open(p, flags) }

/** errno codes that retrying will not cure. */
const PERMANENT = new Set(['ENOENT', 'EACCES', 'EPERM', 'EISDIR', 'ENOTDIR', 'ENAMETOOLONG'])

/**
 * Build output on a local or mounted file system (NFS, a copied directory, tests).
 *
 * Every file is resolved through its symlinks first and must stay inside the source root;
 * it is opened without following a final symlink and without blocking (a FIFO would block
 * open() until a writer came), must be a regular file, and on Linux the open descriptor's
 * real path is checked again, so a symlink swapped in meanwhile does not lead elsewhere.
 * Every call goes through an FsGate: bounded, abandoned at once on abort, cleaned up when
 * a stuck call returns. Messages name files as the requester spelled the root, never where
 * symlinks lead.
 */
export class FileSource implements FetchSource {
  /** The root as given (for messages). */
  readonly root: string
  private realRoot: string | undefined
  private readonly gate: FsGate
  private readonly calls: FileSourceCalls

  /** `root` is a path or a file:// URL. */
  constructor(root: string, opts: FileSourceOptions = {}) {
    this.root = root.startsWith('file:') ? fileURLToPath(root) : resolve(root)
    this.realRoot = opts.realRoot
    this.gate = (opts.gate ?? new FsGate(1)).child(1)
    this.calls = opts.calls ?? DEFAULT_CALLS
  }

  describe(name?: string): string {
    return name === undefined ? this.root : join(this.root, name)
  }

  async read(name: string, req: ReadRequest): Promise<ReadResult> {
    const { signal } = req
    signal.throwIfAborted()
    const shown = this.describe(name)
    const root = await this.resolvedRoot(signal)
    const real = await this.call(() => this.calls.realpath(join(root, name)), signal, shown)
    if (!isInsideDir(real, root)) throw leavesRoot(shown)
    const fh = await this.call(
      () => this.calls.open(real, OPEN_FLAGS),
      signal,
      shown,
      (late) => void this.closeQuietly(late),
    )
    try {
      const st = await this.call(() => fh.stat(), signal, shown)
      if (!st.isFile()) throw new StoreError('RO_FETCH_FAILED', `${shown}: not a regular file`)
      if (process.platform === 'linux') {
        const opened = await this.call(() => readlink(`/proc/self/fd/${fh.fd}`), signal, shown)
        if (!isInsideDir(opened, root)) throw leavesRoot(shown)
      }
      return { stream: this.chunks(fh, req.start, signal, shown), start: req.start, size: st.size }
    } catch (err) {
      void this.closeQuietly(fh)
      throw err
    }
  }

  private async resolvedRoot(signal: AbortSignal): Promise<string> {
    this.realRoot ??= await this.call(() => this.calls.realpath(this.root), signal, this.root)
    return this.realRoot
  }

  /**
   * Bytes from `start` to the end of the file, one gated read of up to 1 MiB at a time.
   * The handle is closed at the end, on an error, on return(), and when the signal aborts
   * even if the stream was never iterated (a generator that never started would not run
   * its cleanup).
   */
  private chunks(fh: FileHandle, start: number, signal: AbortSignal, shown: string): AsyncIterableIterator<Buffer> {
    let pos = start
    let closed = false
    // What was read leaves the page cache: a fetch reads a whole version once, and on the
    // serving node those pages would evict the live version's hot ones.
    const behind = new ReadBehind(fh.fd, start)
    const close = (): void => {
      if (closed) return
      behind.end()
      closed = true
      signal.removeEventListener('abort', close)
      void this.closeQuietly(fh)
    }
    signal.addEventListener('abort', close, { once: true })
    const done: IteratorReturnResult<undefined> = { done: true, value: undefined }
    const it: AsyncIterableIterator<Buffer> = {
      [Symbol.asyncIterator]: () => it,
      next: async () => {
        if (closed) {
          signal.throwIfAborted()
          return done
        }
        try {
          const buf = Buffer.allocUnsafe(CHUNK)
          const { bytesRead } = await this.call(() => fh.read(buf, 0, CHUNK, pos), signal, shown)
          if (bytesRead === 0) {
            close()
            return done
          }
          pos += bytesRead
          behind.passed(pos)
          return { done: false, value: bytesRead === CHUNK ? buf : buf.subarray(0, bytesRead) }
        } catch (err) {
          close()
          throw err
        }
      },
      return: () => {
        close()
        return Promise.resolve(done)
      },
    }
    if (signal.aborted) close()
    return it
  }

  /** A gated call; errno errors that retrying cannot cure become RO_FETCH_FAILED, others are left for the retry policy. */
  private async call<T>(op: () => Promise<T>, signal: AbortSignal, shown: string, onLate?: (v: T) => void): Promise<T> {
    try {
      return await this.gate.run(op, signal, onLate)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ELOOP') throw leavesRoot(shown)
      if (code !== undefined && PERMANENT.has(code)) {
        throw new StoreError(
          'RO_FETCH_FAILED',
          `${shown}: ${code === 'ENOENT' || code === 'ENOTDIR' ? 'not found' : 'cannot read'} (${code})`,
          {
            cause: err,
          },
        )
      }
      throw err
    }
  }

  /** Closing waits for a slot too (close can hang on a dead mount as well); nobody waits for it. */
  private async closeQuietly(fh: FileHandle): Promise<void> {
    await this.gate.run(() => fh.close(), NEVER).catch(() => undefined)
  }
}

function leavesRoot(shown: string): StoreError {
  return new StoreError('RO_BAD_REQUEST', `${shown}: a symbolic link leads outside the source directory; refused`)
}
