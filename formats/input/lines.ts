/**
 * Lines of a text file (TSV, JSON lines) as byte ranges, in batches of one read chunk.
 *
 * This is the hot path of a build, so nothing here makes a string or an object per line:
 * a batch is the chunk plus the [start, end) of each line in it. A line that straddles two
 * chunks is copied into a buffer of its own and delivered as a one-line batch.
 *
 * Rules shared by the line formats:
 * - lines end at '\n'; a '\r' just before it is dropped; a UTF-8 byte order mark at the
 *   start of the file is dropped;
 * - the bytes of every line must be valid UTF-8;
 * - blank lines are allowed only at the end of the file (editors and `echo >>` add them);
 *   a blank line followed by a non-blank one is an error naming the blank line;
 * - with a byte range [start, end), exactly the lines whose first byte is in the range are
 *   read (the last may run past `end`), so the splits of a file read each line once.
 */
import { isUtf8 } from 'node:buffer'
import type { StoreError } from '../../common/errors'
import { atLine, badInput, wrapFileError } from './input-error'
import { openInput, type InputHandle } from './input-file'
import { newlinesBefore } from './line-index'

const CHUNK_BYTES = 1 << 20
const NL = 0x0a
const CR = 0x0d

export interface LineBatch {
  /** Bytes holding the lines; records may keep slices of it. */
  readonly buf: Buffer
  /** File offset of buf[0]. */
  readonly base: number
  /** Line number (1-based) of the batch's first line; the others follow without gaps. */
  readonly firstLine: number
  readonly count: number
  /** Line i is buf[starts[i], ends[i]), without its '\n' or '\r'. Reused: read before the next pull. */
  readonly starts: Int32Array
  readonly ends: Int32Array
}

export interface LineOptions {
  readonly start?: number
  readonly end?: number
  readonly signal?: AbortSignal
  /** Whether a line of only spaces and tabs counts as blank (JSON lines) or not (TSV). */
  readonly blankWhitespace: boolean
  /**
   * Read every chunk into one reused buffer: a batch's bytes are then valid only until the
   * next pull (the batch readers copy what they keep). Fresh memory costs a page fault
   * per 4 KiB, which a build over gigabytes of input feels.
   */
  readonly reuseBuffer?: boolean
}

export async function* readLineBatches(path: string, opts: LineOptions): AsyncGenerator<LineBatch> {
  const start = opts.start ?? 0
  const end = opts.end ?? Number.POSITIVE_INFINITY
  checkRange(start, end)
  let file: InputHandle | undefined
  try {
    file = await openInput(path)
    if (start >= end) return
    // Reading from start-1 shows whether `start` begins a line (byte start-1 is '\n').
    const readFrom = start > 0 ? start - 1 : 0
    const firstLine = 1 + (await newlinesBefore(file, path, readFrom))
    const splitter = new LineSplitter(path, readFrom, end, firstLine, start > 0, opts.blankWhitespace)
    const chunks =
      opts.reuseBuffer === true && file.remote !== true
        ? readReused(file, readFrom)
        : file.createReadStream({ start: readFrom, highWaterMark: CHUNK_BYTES, autoClose: false })
    for await (const chunk of chunks as AsyncIterable<Buffer>) {
      opts.signal?.throwIfAborted()
      for (const batch of splitter.push(chunk)) yield batch
      // Thrown only now, after the lines before the bad one had their turn: the first
      // error in file order is the one reported, whichever check finds it.
      if (splitter.failure !== undefined) throw splitter.failure
      if (splitter.done) break
    }
    for (const batch of splitter.finish()) yield batch
    if (splitter.failure !== undefined) throw splitter.failure
  } catch (err) {
    throw wrapFileError(path, err)
  } finally {
    await file?.close()
  }
}

/** The file from `from` on, in chunks read into one buffer (each valid until the next). */
async function* readReused(file: InputHandle, from: number): AsyncGenerator<Buffer> {
  const buf = Buffer.allocUnsafeSlow(CHUNK_BYTES)
  let pos = from
  for (;;) {
    const { bytesRead } = await file.read(buf, 0, CHUNK_BYTES, pos)
    if (bytesRead === 0) return
    pos += bytesRead
    yield buf.subarray(0, bytesRead)
  }
}

function checkRange(start: number, end: number): void {
  if (!Number.isSafeInteger(start) || start < 0) throw new RangeError(`split start must be a byte offset, got ${start}`)
  if (end !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(end) || end < start)) {
    throw new RangeError(`split end must be a byte offset not before start ${start}, got ${end}`)
  }
}

/** The synchronous part: chunks in, batches out. Exported for tests. */
export class LineSplitter {
  /** True once no further line is wanted: the rest of the file need not be read. */
  done = false
  /**
   * A bad line (blank before more data, invalid UTF-8). The batches returned with it hold
   * the lines before it; the caller throws it once they are used.
   */
  failure: StoreError | undefined
  private base: number
  private line: number
  private skipping: boolean
  private carry: Buffer[] = []
  private carryBase = 0
  /** Line number of the first blank line not yet followed by a non-blank one, or 0. */
  private pendingBlank = 0
  private starts = new Int32Array(4096)
  private ends = new Int32Array(4096)
  /** Second result of take(): where the line's content starts. */
  private takenStart = 0

  /**
   * @param base file offset of the first byte pushed
   * @param firstLine line number of the line holding that byte
   * @param skipFirst drop everything up to and including the first '\n' (a split's head)
   */
  constructor(
    private readonly path: string,
    base: number,
    private readonly end: number,
    firstLine: number,
    skipFirst: boolean,
    private readonly blankWhitespace: boolean,
  ) {
    this.base = base
    this.line = firstLine
    this.skipping = skipFirst
  }

  push(chunk: Buffer): LineBatch[] {
    const base = this.base
    this.base += chunk.length
    const out: LineBatch[] = []
    if (this.done || this.failure !== undefined) return out
    let i = 0
    if (this.skipping) {
      const nl = chunk.indexOf(NL)
      if (nl === -1) return out
      this.skipping = false
      this.line++
      i = nl + 1
    }
    if (this.carry.length > 0) {
      const nl = chunk.indexOf(NL)
      if (nl === -1) {
        this.carry.push(Buffer.from(chunk))
        return out
      }
      this.carry.push(chunk.subarray(0, nl))
      const single = this.carried()
      if (single !== undefined) out.push(single)
      if (this.failure !== undefined) return out
      i = nl + 1
    }
    let count = 0
    let firstLine = this.line
    // Invariant at the top of the loop: a line starts at chunk[i] (or the chunk is used up).
    while (i < chunk.length) {
      if (base + i >= this.end && this.pendingBlank === 0) {
        this.done = true
        break
      }
      const nl = chunk.indexOf(NL, i)
      if (nl === -1) {
        // Copied: the chunk's buffer may be reused for the next one.
        this.carry.push(Buffer.from(chunk.subarray(i)))
        this.carryBase = base + i
        break
      }
      const e = this.take(chunk, i, nl, base + i)
      if (this.failure !== undefined) break
      if (e !== -1) {
        if (count === 0) firstLine = this.line
        if (count === this.starts.length) this.grow()
        this.starts[count] = this.takenStart
        this.ends[count] = e
        count++
      }
      this.line++
      i = nl + 1
    }
    const batch = count > 0 ? this.batch(chunk, base, firstLine, count, this.starts, this.ends) : undefined
    if (batch !== undefined) out.push(batch)
    return out
  }

  /** Call at end of file: the last line may have no '\n'. */
  finish(): LineBatch[] {
    if (this.carry.length === 0 || this.done || this.failure !== undefined) return []
    const single = this.carried()
    return single === undefined ? [] : [single]
  }

  private carried(): LineBatch | undefined {
    const buf = Buffer.concat(this.carry)
    this.carry = []
    const e = this.take(buf, 0, buf.length, this.carryBase)
    const line = this.line++
    if (e === -1 || this.failure !== undefined) return undefined
    return this.batch(buf, this.carryBase, line, 1, Int32Array.of(this.takenStart), Int32Array.of(e))
  }

  /**
   * Looks at the line buf[s, nl) starting at file offset `offset`: returns its end without
   * '\r' (its start, past a BOM, in takenStart), or -1 when it is not a record (blank,
   * past the split's end while checking that only blank lines follow, or bad: `failure`).
   */
  private take(buf: Buffer, s: number, nl: number, offset: number): number {
    let e = nl
    if (e > s && buf[e - 1] === CR) e--
    if (offset === 0 && e - s >= 3 && buf[s] === 0xef && buf[s + 1] === 0xbb && buf[s + 2] === 0xbf) s += 3
    if (this.isBlank(buf, s, e)) {
      if (this.pendingBlank === 0) this.pendingBlank = this.line
      return -1
    }
    if (this.pendingBlank !== 0) {
      this.failure = badInput(atLine(this.path, this.pendingBlank), 'empty line')
      return -1
    }
    if (offset >= this.end) {
      // Only here to make sure blank lines before `end` were trailing ones.
      this.done = true
      return -1
    }
    this.takenStart = s
    return e
  }

  private isBlank(buf: Buffer, s: number, e: number): boolean {
    if (s === e) return true
    if (!this.blankWhitespace) return false
    for (let p = s; p < e; p++) {
      const c = buf[p]
      if (c !== 0x20 && c !== 0x09) return false
    }
    return true
  }

  /** The batch of `count` lines, cut short before the first one that is not UTF-8. */
  private batch(buf: Buffer, base: number, firstLine: number, count: number, starts: Int32Array, ends: Int32Array): LineBatch | undefined {
    // One native call per batch; only when it fails do we look for the guilty line.
    if (!isUtf8(buf.subarray(starts[0]!, ends[count - 1]!))) {
      for (let k = 0; k < count; k++) {
        if (!isUtf8(buf.subarray(starts[k]!, ends[k]!))) {
          // An earlier bad line than one found while splitting (which ended this batch).
          this.failure = badInput(atLine(this.path, firstLine + k), 'invalid UTF-8')
          count = k
          break
        }
      }
    }
    return count === 0 ? undefined : { buf, base, firstLine, count, starts, ends }
  }

  private grow(): void {
    const starts = new Int32Array(this.starts.length * 2)
    const ends = new Int32Array(this.ends.length * 2)
    starts.set(this.starts)
    ends.set(this.ends)
    this.starts = starts
    this.ends = ends
  }
}
