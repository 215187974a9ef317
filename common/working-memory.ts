import { nativeFunctions } from './native'

/** Below one huge page the mapping gains nothing. */
const HUGE_PAGE_BYTES = 2 << 20

/**
 * Large, long-lived working memory (the builder's sort arena and record arrays, Parquet
 * page buffers) as a zero-filled SharedArrayBuffer.
 *
 * Fresh memory costs one page fault per 4 KiB page on first touch, and on virtual machines
 * a fault is expensive (bench/RESULTS.md, section 1: builder memory). The addon's
 * anonBuffer maps the memory with MADV_HUGEPAGE, one fault per 2 MiB where the kernel
 * allows transparent huge pages (the default "madvise" mode does). Without the addon, or
 * for small sizes, it is an ordinary SharedArrayBuffer: the same bytes, more faults.
 */
export function workingMemory(bytes: number): SharedArrayBuffer {
  const native = bytes >= HUGE_PAGE_BYTES ? nativeFunctions() : undefined
  if (native !== undefined) {
    try {
      return native.anonBuffer(bytes)
    } catch {
      // The mapping failed (address space or a limit): V8's allocator says so its own way.
    }
  }
  return new SharedArrayBuffer(bytes)
}

/**
 * One buffer reused for data of varying size (a column's decompressed pages): `take(n)`
 * returns n bytes of it, growing it when n does not fit. Whatever an earlier take returned
 * is overwritten by the next one's user, so only a caller that is done with the previous
 * bytes may take again.
 */
export class ScratchBuffer {
  private buf: Buffer = Buffer.alloc(0)

  take(bytes: number): Buffer {
    if (bytes > this.buf.length) {
      // Headroom, so pages that vary a little in size do not grow it page after page; whole
      // huge pages only where it takes them (a small buffer rounded up would be mostly waste).
      const want = Math.ceil(bytes * 1.25)
      this.buf = Buffer.from(workingMemory(want >= HUGE_PAGE_BYTES ? Math.ceil(want / HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES : want))
    }
    return this.buf.subarray(0, bytes)
  }
}
