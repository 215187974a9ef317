/**
 * An input file as the readers use it: random reads, its size, sequential chunks. A local
 * file is a plain FileHandle; an `s3://` object is an `S3InputFile` (s3-input.ts, loaded
 * only when an s3:// input is named, so local builds never load the S3 client).
 */
import { open, stat } from 'node:fs/promises'
import { isS3Url } from '../../s3/s3-url'

export interface InputHandle {
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>
  stat(): Promise<{ size: number; mtimeMs: number }>
  close(): Promise<void>
  /** Bytes from `start` to the end, in chunks of about `highWaterMark`. */
  createReadStream(opts: { start: number; highWaterMark: number; autoClose: false }): AsyncIterable<Buffer>
  /**
   * Each random read is a request over the network: readers then stream rather than read
   * chunk by chunk, and read larger windows.
   */
  readonly remote?: boolean
}

function s3Input(): typeof import('./s3-input') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('./s3-input') as typeof import('./s3-input')
}

/** Opens a local path or an s3:// object for reading; the errors are the file system's (or S3's). */
export async function openInput(path: string): Promise<InputHandle> {
  if (isS3Url(path)) return s3Input().openS3Input(path)
  return open(path, 'r')
}

/** Size of a local file or an s3:// object. */
export async function inputSize(path: string): Promise<number> {
  if (isS3Url(path)) return (await s3Input().statS3Input(path)).size
  return (await stat(path)).size
}
