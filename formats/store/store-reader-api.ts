import type { StoreMetadata } from './metadata'
import type { SearchStrategy } from './search'

/** Read side of one node directory of one store version. Lookups are synchronous: a
 *  lookup is an in-memory index search plus one pread of a page-cached file. Measured on
 *  this 2-core machine (256 B reads of a page-cached data file, one at a time): readSync
 *  0.88 us, fs.read through the libuv pool 33 us (thread hand-off and wake-up). A read
 *  that misses the page cache does block the caller; see docs/SERVING.md. */
export interface StoreReader {
  readonly dir: string
  readonly metadata: StoreMetadata
  /** The value's bytes (decompressed), or undefined when the key is absent. */
  get(key: Uint8Array | string): Buffer | undefined
  getMany(keys: readonly (Uint8Array | string)[]): (Buffer | undefined)[]
  /** Index entries compared by the last get(), for benchmarks. */
  readonly lastProbes: number
  close(): void
}

export interface OpenOptions {
  /** Index search; default 'interpolation'. */
  readonly search?: SearchStrategy
  /** Check every index file against its metadata checksum while loading it; default true. */
  readonly verifyIndex?: boolean
}
