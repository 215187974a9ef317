import { wrapFileError } from '../../../formats/input/input-error'
import { openInput, type InputHandle } from '../../../formats/input/input-file'

/**
 * The raw lines of a byte range of an input, read by the task itself (`rostore hadoop map
 * --range`): exactly the lines whose first byte is in [start, end), the last one running
 * past `end` if it must, each without its '\n' (a '\r' is left for the line parser), with
 * its byte offset. The same lines Hadoop's TextInputFormat (and the Ray driver for a local
 * file) would hand the mapper on stdin. Works on local paths and s3:// objects (ranged
 * GETs of bounded windows, so a task fetches about its range and not the rest of the
 * object).
 */
export interface RangeLine {
  readonly buf: Buffer
  readonly start: number
  readonly end: number
  readonly offset: number
}

/** Window of one read inside the range; after `end`, only the last line's tail is read, in smaller ones. */
const WINDOW = 4 << 20
const TAIL_WINDOW = 64 << 10
const NL = 0x0a

export async function* rangeLines(path: string, start: number, end: number): AsyncGenerator<RangeLine> {
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start)
    throw new RangeError(`bad byte range ${start}-${end}`)
  let file: InputHandle | undefined
  try {
    file = await openInput(path)
    const size = (await file.stat()).size
    const stop = Math.min(end, size)
    if (start >= stop) return
    // Byte start-1 shows whether `start` begins a line; if not, that line belongs to the previous range.
    let pos = start > 0 ? start - 1 : 0
    let skipping = start > 0
    let carry: Buffer = Buffer.alloc(0)
    let carryFrom = pos
    while (pos < size) {
      const want = pos < stop ? Math.min(WINDOW, stop - pos) : Math.min(TAIL_WINDOW, size - pos)
      const chunk = Buffer.allocUnsafe(want)
      const { bytesRead } = await file.read(chunk, 0, want, pos)
      if (bytesRead === 0) break
      const buf = carry.length > 0 ? Buffer.concat([carry, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead)
      const base = carry.length > 0 ? carryFrom : pos
      pos += bytesRead
      let s = 0
      for (;;) {
        const nl = buf.indexOf(NL, s)
        if (nl < 0) break
        if (skipping) skipping = false
        else if (base + s < stop) yield { buf, start: s, end: nl, offset: base + s }
        else return
        s = nl + 1
      }
      if (!skipping && base + s >= stop) return
      carry = buf.subarray(s)
      carryFrom = base + s
    }
    // The file's last line, without a '\n'.
    if (!skipping && carry.length > 0 && carryFrom < stop) yield { buf: carry, start: 0, end: carry.length, offset: carryFrom }
  } catch (err) {
    throw wrapFileError(path, err)
  } finally {
    await file?.close()
  }
}
