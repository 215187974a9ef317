/**
 * One byte buffer written at `pos` that grows by doubling (what was written is copied
 * over). The RESP reply writer is one; HTTP multi-get bodies are others
 * (server/http/response-buffers.ts). It satisfies the reader's FrameSink.
 */
export class GrowableBuffer {
  buf: Buffer
  pos = 0

  constructor(initialSize: number) {
    this.buf = Buffer.allocUnsafeSlow(initialSize)
  }

  get length(): number {
    return this.pos
  }

  /** Room for `n` more bytes. */
  reserve(n: number): void {
    if (this.pos + n > this.buf.length) this.grow(n)
  }

  /** The bytes written so far (a view of the buffer). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos)
  }

  private grow(n: number): void {
    let size = Math.max(this.buf.length * 2, 1024)
    while (size < this.pos + n) size *= 2
    const nb = Buffer.allocUnsafeSlow(size)
    this.buf.copy(nb, 0, 0, this.pos)
    this.buf = nb
  }
}
