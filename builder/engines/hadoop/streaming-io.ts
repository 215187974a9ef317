import { readSync, writeSync } from 'node:fs'

/**
 * Blocking line I/O on the task's stdin and stdout file descriptors. A Streaming task
 * does one thing at a time, and the reduce step consumes a synchronous iterable, so plain
 * read(2)/write(2) on fds 0 and 1 is both the simplest and the fastest way. `process.stdin`
 * and `process.stdout` must not be touched in the same process (they would switch the
 * descriptors to non-blocking mode); EAGAIN is still handled, by waiting briefly.
 */
const NL = 0x0a
const WAIT = new Int32Array(new SharedArrayBuffer(4))

function pause(): void {
  Atomics.wait(WAIT, 0, 0, 2)
}

function isAgain(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  return code === 'EAGAIN' || code === 'EWOULDBLOCK'
}

export class SyncLineReader {
  /** The current line is buf[start, end) (no '\n'); valid until the next call to next(). */
  buf: Buffer
  start = 0
  end = 0
  /** Bytes consumed so far, line ends included. */
  bytesRead = 0
  private pos = 0
  private len = 0
  private eof = false

  constructor(
    private readonly fd: number,
    initialSize = 1 << 20,
  ) {
    this.buf = Buffer.allocUnsafe(initialSize)
  }

  /** Advances to the next line; false at end of input. A last line without '\n' counts. */
  next(): boolean {
    for (;;) {
      const nl = this.pos < this.len ? this.buf.indexOf(NL, this.pos) : -1
      if (nl >= 0 && nl < this.len) {
        this.start = this.pos
        this.end = nl
        this.pos = nl + 1
        this.bytesRead += nl + 1 - this.start
        return true
      }
      if (this.eof) {
        if (this.pos < this.len) {
          this.start = this.pos
          this.end = this.len
          this.bytesRead += this.len - this.pos
          this.pos = this.len
          return true
        }
        return false
      }
      this.fill()
    }
  }

  private fill(): void {
    if (this.pos > 0) {
      this.buf.copyWithin(0, this.pos, this.len)
      this.len -= this.pos
      this.pos = 0
    }
    if (this.len === this.buf.length) {
      const bigger = Buffer.allocUnsafe(this.buf.length * 2)
      this.buf.copy(bigger, 0, 0, this.len)
      this.buf = bigger
    }
    for (;;) {
      let n: number
      try {
        n = readSync(this.fd, this.buf, this.len, this.buf.length - this.len, null)
      } catch (err) {
        if (isAgain(err)) {
          pause()
          continue
        }
        if ((err as NodeJS.ErrnoException).code === 'EOF') n = 0
        else throw err
      }
      if (n === 0) this.eof = true
      this.len += n
      return
    }
  }
}

export class SyncWriter {
  private buf: Buffer
  private used = 0
  bytesWritten = 0

  constructor(
    private readonly fd: number,
    size = 1 << 20,
  ) {
    this.buf = Buffer.allocUnsafe(size)
  }

  /** Room for `n` more bytes: returns the buffer and the position to write at; then call `advance`. */
  reserve(n: number): { buf: Buffer; at: number } {
    if (this.used + n > this.buf.length) {
      this.flush()
      if (n > this.buf.length) this.buf = Buffer.allocUnsafe(Math.max(n, this.buf.length * 2))
    }
    return { buf: this.buf, at: this.used }
  }

  advance(to: number): void {
    this.used = to
  }

  write(text: string | Uint8Array): void {
    const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text
    const { buf, at } = this.reserve(bytes.length)
    buf.set(bytes, at)
    this.used = at + bytes.length
  }

  flush(): void {
    let done = 0
    while (done < this.used) {
      try {
        done += writeSync(this.fd, this.buf, done, this.used - done)
      } catch (err) {
        if (!isAgain(err)) throw err
        pause()
      }
    }
    this.bytesWritten += this.used
    this.used = 0
  }
}
