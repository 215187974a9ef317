import { inputSize, openInput } from '../../../formats/input/input-file'
import { listInputFiles } from '../../../formats/input/read-input'
import { firstLine, type ListedInput } from './job-fs'

/**
 * s3:// inputs of a job whose tasks read them with rostore's own S3 client (the Ray
 * engine): listed here by the build's rules (parts in name order, `_*` and `.*` skipped,
 * `_SUCCESS` checked when asked), sized by HEAD; the only bytes of data read here are a
 * CSV part's header line. Loads the S3 client only when called.
 */
export async function listS3JobInputs(input: string, requireSuccess: boolean): Promise<ListedInput[]> {
  const out: ListedInput[] = []
  for (const path of await listInputFiles([input], { requireSuccess })) out.push({ path, size: await inputSize(path) })
  return out
}

/** First window of a header read (a header is short); each next one is twice as large. */
const HEADER_WINDOW = 4 << 10

/** The first line of an object (BOM and line end removed), read by ranged GETs from its start until a '\n' or `limit` bytes. */
export async function readS3FirstLine(url: string, limit = 1 << 20): Promise<Buffer> {
  const file = await openInput(url)
  try {
    const parts: Buffer[] = []
    let at = 0
    let window = HEADER_WINDOW
    while (at < limit) {
      const buf = Buffer.allocUnsafe(Math.min(window, limit - at))
      window *= 2
      const { bytesRead } = await file.read(buf, 0, buf.length, at)
      if (bytesRead === 0) break
      parts.push(buf.subarray(0, bytesRead))
      at += bytesRead
      if (buf.subarray(0, bytesRead).includes(0x0a)) break
    }
    return firstLine(Buffer.concat(parts))
  } finally {
    await file.close()
  }
}
