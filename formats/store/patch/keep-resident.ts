import { nativeFunctions } from '../../../common/native'
import { CACHE_DROP_WINDOW } from '../../../common/read-behind'

const PAGE = 4096

/**
 * A live base file read once by a rebuild, that leaves the page cache as it found it: its
 * hot pages stay (reads are served from them), and the pages the rebuild brought in are
 * dropped once it is past them. Without that, a rebuild made the whole live version
 * resident, which the install then took for its hot set and warmed in the new version
 * (swapper/local-serving.ts, carryHotSet): a second read of every byte.
 * Residency is taken once (mincore over a mapping that is never touched) before the reads:
 * a page the node's reads bring in meanwhile may be dropped too, and is read again on its
 * next use. Without the addon there is no residency, and nothing is dropped.
 */
export class KeepResident {
  /** Pages before this one are done with. */
  private done = 0

  private constructor(
    private readonly vec: Uint8Array,
    private readonly drop: (fd: number, offset: number, length: number) => number,
  ) {}

  static async snapshot(path: string): Promise<KeepResident | undefined> {
    const native = nativeFunctions()
    if (native === undefined) return undefined
    try {
      const mapped = await native.mapFile(path, false, 1 << 30)
      const vec = new Uint8Array(Math.ceil(mapped.size / PAGE))
      if (mapped.windows.length > 0) await native.refreshResidency(mapped.windows, vec)
      return new KeepResident(vec, native.dropRange)
    } catch {
      // Only advice: the rebuild reads the base all the same.
      return undefined
    }
  }

  /**
   * The reader is past `pos`: the pages that were not resident are dropped up to the
   * aligned window before it. The kernel drops only folios a range covers whole, and a read
   * in sequence is cached in large folios up to the window's size, naturally aligned
   * (common/read-behind.ts): runs cut at window boundaries cover theirs whole.
   */
  passed(fd: number, pos: number): void {
    const upTo = pos - (pos % CACHE_DROP_WINDOW) - CACHE_DROP_WINDOW
    if (upTo > 0) this.dropUpTo(fd, Math.min(upTo / PAGE, this.vec.length))
  }

  /** Done reading (the fd still open). */
  end(fd: number): void {
    this.dropUpTo(fd, this.vec.length)
  }

  private dropUpTo(fd: number, page: number): void {
    const vec = this.vec
    let p = this.done
    while (p < page) {
      if ((vec[p] as number) & 1) {
        p++
        continue
      }
      const from = p
      while (p < page && ((vec[p] as number) & 1) === 0) p++
      this.drop(fd, from * PAGE, (p - from) * PAGE)
    }
    this.done = Math.max(this.done, page)
  }
}
