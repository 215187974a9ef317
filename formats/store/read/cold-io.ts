import { closeSync } from 'node:fs'
import type { StoreOps } from './store-ops'

/**
 * How a reader's warm-ups read cold records (docs/SERVING.md, "Stores larger than memory"):
 * 'uring' through the addon's own io_uring, completions on the event loop; 'pool' on the
 * libuv pool (process_madvise + MADV_POPULATE_READ).
 */
export const COLD_IO_MODES = ['uring', 'pool'] as const
export type ColdIo = (typeof COLD_IO_MODES)[number]

/**
 * 'uring' where the addon can set up a ring on this thread (the kernel has io_uring and no
 * sysctl, seccomp filter or container refuses it), else 'pool'. ROSTORE_COLD_IO=pool|uring
 * forces one; 'uring' where a ring cannot be set up still falls back to 'pool' (a reader
 * must read), which /status shows (coldReads.io).
 */
export function coldIoFor(ops: StoreOps): ColdIo {
  const forced = process.env['ROSTORE_COLD_IO']
  if (forced === 'pool') return 'pool'
  if (!ops.uringProbe || !ops.readRecords || !ops.openRandom) return 'pool'
  return ops.uringProbe() === 0 ? 'uring' : 'pool'
}

/**
 * The data files as readRecords takes them ([fd, vec, size]), each opened at its first cold
 * read (fd -1 until then) and closed once the reader is closed and no read is in flight.
 */
export class UringFiles {
  readonly triples: [number, Uint8Array, number][] = []
  private readonly paths: string[] = []

  constructor(private readonly ops: Required<Pick<StoreOps, 'openRandom' | 'readRecords'>>) {}

  add(path: string, vec: Uint8Array, size: number): void {
    this.paths.push(path)
    this.triples.push([-1, vec, size])
  }

  /** Opens the files `ranges` (file, offset, length triples) name; false when one cannot be. */
  open(ranges: readonly number[]): boolean {
    for (let i = 0; i < ranges.length; i += 3) {
      const t = this.triples[ranges[i] as number]
      if (!t || t[0] >= 0) continue
      const fd = this.ops.openRandom(this.paths[ranges[i] as number] as string)
      if (fd < 0) return false
      t[0] = fd
    }
    return true
  }

  read(ranges: readonly number[], count: number): Promise<number> {
    return this.ops.readRecords(this.triples, Float64Array.from(ranges), count)
  }

  close(): void {
    for (const t of this.triples) if (t[0] >= 0) closeSync(t[0])
    this.triples.length = 0
    this.paths.length = 0
  }
}
