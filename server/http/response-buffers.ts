import { GrowableBuffer } from '../../common/growable-buffer'

/**
 * Response bodies of multi-gets, reused: a fresh Buffer for every response is fresh memory
 * to the allocator often enough, and each page touched for the first time is a page fault,
 * costly on a VM (a 100 KiB answer is 25 pages). A sink goes back only once its
 * response has finished, that is once the socket has handed every byte to the kernel;
 * a response closed before that leaves its sink to the garbage collector. Bounded: at
 * most `maxFree` sinks of at most `maxKeepBytes` each wait here.
 */
export class ResponseBuffers {
  private readonly free: GrowableBuffer[] = []

  constructor(
    private readonly maxFree = 64,
    private readonly maxKeepBytes = 1 << 20,
    private readonly initialBytes = 16 << 10,
  ) {}

  acquire(): GrowableBuffer {
    const s = this.free.pop()
    if (!s) return new GrowableBuffer(this.initialBytes)
    s.pos = 0
    return s
  }

  release(s: GrowableBuffer): void {
    if (this.free.length < this.maxFree && s.buf.length <= this.maxKeepBytes) this.free.push(s)
  }

  /** Sinks waiting for reuse (for tests). */
  get idle(): number {
    return this.free.length
  }
}
