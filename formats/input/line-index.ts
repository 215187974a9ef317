/**
 * Line numbers of byte offsets, for readers of a byte-range split: a split starting deep in
 * a file still reports absolute line numbers, which takes counting the newlines before it.
 *
 * Counting from 0 for every split would read a file of N splits N²/2 times over, so the
 * count at every 1 MiB block boundary is remembered per file (keyed by size and mtime so
 * an edited file is recounted): a process reading several splits of one file, in order,
 * reads the file's prefix about once in total.
 */
import { resolve } from 'node:path'
import { isS3Url } from '../../s3/s3-url'
import { openInput, type InputHandle } from './input-file'
import { wrapFileError } from './input-error'

const BLOCK = 1 << 20
/** Enough for the files one build reads at a time; each entry is 8 bytes per MiB of file. */
const MAX_FILES = 64

interface NewlineIndex {
  readonly size: number
  readonly mtimeMs: number
  /** counts[k] = number of '\n' bytes in [0, k * BLOCK). */
  readonly counts: number[]
}

const indexes = new Map<string, NewlineIndex>()

/** Number of '\n' bytes in [0, offset) of the open file `file` whose path is `path`. */
export async function newlinesBefore(file: InputHandle, path: string, offset: number): Promise<number> {
  if (offset <= 0) return 0
  const index = await indexFor(file, path)
  const block = Math.floor(offset / BLOCK)
  const buf = Buffer.allocUnsafe(BLOCK)
  while (index.counts.length <= block) {
    const k = index.counts.length - 1
    const n = await countNewlines(file, buf, k * BLOCK, BLOCK)
    // Another reader of the same file may have extended the index while we were reading.
    if (index.counts.length === k + 1) index.counts.push(index.counts[k]! + n)
  }
  return index.counts[block]! + (await countNewlines(file, buf, block * BLOCK, offset - block * BLOCK))
}

/** 1-based line number of the line holding byte `offset` of the file at `path`. */
export async function lineNumberAt(path: string, offset: number): Promise<number> {
  let file: InputHandle | undefined
  try {
    file = await openInput(path)
    return 1 + (await newlinesBefore(file, path, offset))
  } catch (err) {
    throw wrapFileError(path, err)
  } finally {
    await file?.close()
  }
}

async function indexFor(file: InputHandle, path: string): Promise<NewlineIndex> {
  const { size, mtimeMs } = await file.stat()
  const id = isS3Url(path) ? path : resolve(path)
  let index = indexes.get(id)
  if (index === undefined || index.size !== size || index.mtimeMs !== mtimeMs) {
    index = { size, mtimeMs, counts: [0] }
  }
  // Re-inserting keeps the map in least-recently-used-first order for eviction.
  indexes.delete(id)
  indexes.set(id, index)
  if (indexes.size > MAX_FILES) {
    const oldest = indexes.keys().next().value
    if (oldest !== undefined) indexes.delete(oldest)
  }
  return index
}

/** '\n' bytes in [position, position + length) of the file; stops early at end of file. */
async function countNewlines(file: InputHandle, buf: Buffer, position: number, length: number): Promise<number> {
  let count = 0
  let done = 0
  while (done < length) {
    const { bytesRead } = await file.read(buf, 0, Math.min(buf.length, length - done), position + done)
    if (bytesRead === 0) break
    const view = buf.subarray(0, bytesRead)
    for (let p = view.indexOf(10); p !== -1; p = view.indexOf(10, p + 1)) count++
    done += bytesRead
  }
  return count
}
