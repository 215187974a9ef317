/**
 * One local file into one object: a PutObject when small, else a multipart upload of
 * parts read from the file one at a time. Every request carries the MD5 and SHA-256 of its
 * bytes, which the store checks before it keeps them; the object appears whole or not at
 * all (a multipart upload that fails is aborted).
 */
import { open } from 'node:fs/promises'
import { withRetries } from './retry'
import type { S3Client } from './s3-client'
import type { S3Location } from './s3-url'

/** S3's bounds: parts of 5 MiB at least (but the last), 10,000 parts at most. */
const MIN_PART_BYTES = 5 << 20
const MAX_PARTS = 10_000
export const DEFAULT_PART_BYTES = 16 << 20

export interface UploadOptions {
  /** Part size of multipart uploads, and the size up to which one PutObject is used; default 16 MiB. */
  readonly partBytes?: number
  readonly signal?: AbortSignal
  /** Called with the bytes of each request that succeeded. */
  readonly onBytes?: (n: number) => void
}

export async function uploadFile(s3: S3Client, path: string, loc: S3Location, opts: UploadOptions = {}): Promise<void> {
  const fh = await open(path, 'r')
  try {
    const { size } = await fh.stat()
    const wanted = opts.partBytes ?? DEFAULT_PART_BYTES
    const partBytes = Math.max(MIN_PART_BYTES, wanted, Math.ceil(size / MAX_PARTS))
    const readPart = async (start: number): Promise<Buffer> => {
      const length = Math.min(partBytes, size - start)
      const buf = Buffer.allocUnsafe(length)
      let done = 0
      while (done < length) {
        const { bytesRead } = await fh.read(buf, done, length - done, start + done)
        if (bytesRead === 0) throw new Error(`${path} became shorter while it was uploaded`)
        done += bytesRead
      }
      return buf
    }
    const retry = { signal: opts.signal }
    if (size <= Math.max(wanted, MIN_PART_BYTES)) {
      const body = await readPart(0)
      await withRetries(() => s3.put(loc, body, opts.signal), retry)
      opts.onBytes?.(body.length)
      return
    }
    const uploadId = await withRetries(() => s3.createMultipartUpload(loc, opts.signal), retry)
    try {
      const etags: string[] = []
      for (let start = 0, n = 1; start < size; start += partBytes, n++) {
        const body = await readPart(start)
        etags.push(await withRetries(() => s3.uploadPart(loc, uploadId, n, body, opts.signal), retry))
        opts.onBytes?.(body.length)
      }
      await withRetries(() => s3.completeMultipartUpload(loc, uploadId, etags, opts.signal), retry)
    } catch (err) {
      // Parts kept by the store cost money until aborted; the error reported is the upload's.
      await s3.abortMultipartUpload(loc, uploadId).catch(() => undefined)
      throw err
    }
  } finally {
    await fh.close()
  }
}
