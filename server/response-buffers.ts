import type { FrameSink } from '../formats/store/store-reader-api'

/**
 * A growable byte buffer that a batch's framed answers are written into in place
 * (StoreReader.getManyFramedInto).
 */
export class ByteSink implements FrameSink {
  buf: Buffer
  pos = 0

  constructor(initialBytes: number) {
    this.buf = Buffer.allocUnsafeSlow(initialBytes)
  }

  reserve(n: number): void {
    if (this.pos + n <= this.buf.length) return
    let size = Math.max(this.buf.length * 2, 1024)
    while (size < this.pos + n) size *= 2
    const nb = Buffer.allocUnsafeSlow(size)
    this.buf.copy(nb, 0, 0, this.pos)
    this.buf = nb
  }

  /** The bytes written so far (a view of the buffer). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos)
  }
}

/**
 * Response bodies of multi-gets, reused: a fresh Buffer for every response is fresh memory
 * to the allocator often enough, and a page touched for the first time costs ~10 µs on
 * VMs like the benchmark's (a 100 KiB answer is 25 pages). A sink goes back only once its
 * response has finished, that is once the socket has handed every byte to the kernel;
 * a response closed before that leaves its sink to the garbage collector. Bounded: at
 * most `maxFree` sinks of at most `maxKeepBytes` each wait here.
 */
export class ResponseBuffers {
  private readonly free: ByteSink[] = []

  constructor(
    private readonly maxFree = 64,
    private readonly maxKeepBytes = 1 << 20,
    private readonly initialBytes = 16 << 10,
  ) {}

  acquire(): ByteSink {
    const s = this.free.pop()
    if (!s) return new ByteSink(this.initialBytes)
    s.pos = 0
    return s
  }

  release(s: ByteSink): void {
    if (this.free.length < this.maxFree && s.buf.length <= this.maxKeepBytes) this.free.push(s)
  }

  /** Sinks waiting for reuse (for tests). */
  get idle(): number {
    return this.free.length
  }
}
