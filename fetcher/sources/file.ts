import { open } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { StoreError } from '../../common/errors'
import type { FetchSource, ReadRequest, ReadResult } from './source'

/** Build output on a local or mounted file system (NFS, a copied directory, tests). */
export class FileSource implements FetchSource {
  readonly root: string

  /** `root` is a path or a file:// URL. */
  constructor(root: string) {
    this.root = root.startsWith('file:') ? fileURLToPath(root) : resolve(root)
  }

  describe(name?: string): string {
    return name === undefined ? this.root : join(this.root, name)
  }

  async read(name: string, req: ReadRequest): Promise<ReadResult> {
    req.signal.throwIfAborted()
    const path = join(this.root, name)
    let fh
    try {
      fh = await open(path, 'r')
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      // A missing or unreadable file will not appear by retrying: give up at once.
      if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR' || code === 'ENOTDIR') {
        throw new StoreError('RO_FETCH_FAILED', `cannot read ${path}: ${code}`, { cause: err })
      }
      throw err
    }
    try {
      const { size } = await fh.stat()
      // The stream owns the handle from here on and closes it when it ends or is destroyed.
      const stream = fh.createReadStream({ start: req.start, highWaterMark: 1 << 20, signal: req.signal })
      fh = undefined
      return { stream: stream as AsyncIterable<Buffer>, start: req.start, size }
    } finally {
      await fh?.close()
    }
  }
}
