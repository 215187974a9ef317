/**
 * The pages of one column chunk, read from the file in windows of about a mebibyte (or
 * one page, when a page is larger): memory per column is one window plus one
 * decompressed page, however large the row group. Windows are reused only where the
 * reader asks for it (the build's batches copy every row): records of the record reader
 * may still hold slices of the page they came from.
 */
import type { InputHandle } from '../input-file'
import type { ScratchBuffer } from '../../../common/working-memory'
import { parquetHeader, type PageHeader } from './hyparquet'

const WINDOW_BYTES = 1 << 20
/** From object storage every window is a request: fewer, larger ones. */
const REMOTE_WINDOW_BYTES = 4 << 20
const EMPTY = Buffer.alloc(0)
/** Most page headers are a few dozen bytes; statistics with long min/max values make them larger. */
const HEADER_GUESS = 512

export interface Page {
  readonly header: PageHeader
  /** The page's bytes as stored (compressed). */
  readonly bytes: Uint8Array
}

/** Bytes that are not a page where a page should be. */
export class PageError extends Error {
  override readonly name = 'PageError'
}

export class PageReader {
  private window: Buffer = EMPTY
  /** File offset of window[0]. */
  private windowStart: number
  private pos: number
  private readonly end: number

  /**
   * `spare`: read every window into this buffer. A page's stored bytes are then valid only
   * until the next call of `next`, which suits a cursor that decompresses each page (or
   * copies its rows) before it asks for the next one. `windowBytes`: tests make it small.
   */
  constructor(
    private readonly file: InputHandle,
    start: number,
    length: number,
    private readonly spare?: ScratchBuffer,
    private readonly windowBytes = file.remote === true ? REMOTE_WINDOW_BYTES : WINDOW_BYTES,
  ) {
    this.windowStart = start
    this.pos = start
    this.end = start + length
  }

  get reusesWindows(): boolean {
    return this.spare !== undefined
  }

  /** The next page, or undefined at the end of the chunk. */
  async next(): Promise<Page | undefined> {
    if (this.pos >= this.end) return undefined
    let want = Math.min(HEADER_GUESS, this.end - this.pos)
    let header: PageHeader
    let headerLength: number
    for (;;) {
      await this.ensure(want)
      const at = this.pos - this.windowStart
      const view = new DataView(this.window.buffer, this.window.byteOffset + at, this.window.length - at)
      const reader = { view, offset: 0 }
      try {
        header = parquetHeader(reader)
        headerLength = reader.offset
        break
      } catch (err) {
        // Cut off by the window: try a longer one, up to the end of the chunk.
        if (err instanceof RangeError && want < this.end - this.pos) {
          want = Math.min(want * 4, this.end - this.pos)
          continue
        }
        throw new PageError(`no readable page header at byte ${this.pos}`, { cause: err })
      }
    }
    const size = header.compressed_page_size
    if (!Number.isSafeInteger(size) || size < 0 || this.pos + headerLength + size > this.end) {
      throw new PageError(`page at byte ${this.pos} claims ${size} bytes, past the end of its column chunk`)
    }
    await this.ensure(headerLength + size)
    const at = this.pos - this.windowStart + headerLength
    const bytes = this.window.subarray(at, at + size)
    this.pos += headerLength + size
    // A page that ends the window (pages larger than a window always do) leaves the
    // window to the caller: once the page is decompressed, its stored bytes can go.
    if (this.pos >= this.windowStart + this.window.length) {
      this.window = EMPTY
      this.windowStart = this.pos
    }
    return { header, bytes }
  }

  /** Makes bytes [pos, pos + n) available in the window. */
  private async ensure(n: number): Promise<void> {
    if (this.pos + n <= this.windowStart + this.window.length) return
    const length = Math.min(Math.max(n, this.windowBytes), this.end - this.pos)
    const window = this.spare !== undefined ? this.spare.take(length) : Buffer.allocUnsafe(length)
    const { bytesRead } = await this.file.read(window, 0, length, this.pos)
    if (bytesRead < n) throw new PageError(`the file ends inside a column chunk (at byte ${this.pos + bytesRead})`)
    this.window = window.subarray(0, bytesRead)
    this.windowStart = this.pos
  }
}
