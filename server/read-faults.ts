import { isStoreError, type ErrorCode } from '../common/errors'

/** Error codes of a read that found the store's files damaged (HTTP 422). */
export const CORRUPTION_CODES: readonly ErrorCode[] = ['RO_CORRUPT', 'RO_CHECKSUM_MISMATCH', 'RO_BAD_FORMAT']

export interface CorruptReads {
  /** Reads of this store that failed on damaged files since the node started. */
  readonly count: number
  readonly lastCode: ErrorCode
  /** ISO time of the last one. */
  readonly lastAt: string
  /** The version that was read. */
  readonly lastVersion: number
}

/**
 * Reads that failed because a store's files are damaged, per store (issue 17, defect 4):
 * the node reports them in /status, so an operator sees which replica to repair while
 * clients read from the others. One entry per store the node has; counts since start.
 */
export class ReadFaults {
  private readonly byStore = new Map<string, CorruptReads>()

  /** Counts `err` when it is a corruption error of a read of `store` at `version`. */
  note(store: string, version: number, err: unknown): void {
    if (!isStoreError(err) || !CORRUPTION_CODES.includes(err.code)) return
    const prev = this.byStore.get(store)
    this.byStore.set(store, { count: (prev?.count ?? 0) + 1, lastCode: err.code, lastAt: new Date().toISOString(), lastVersion: version })
  }

  get(store: string): CorruptReads | undefined {
    return this.byStore.get(store)
  }
}
