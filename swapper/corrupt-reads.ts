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
 * Reads of one store that failed because its files are damaged: the
 * node reports them in /status, so an operator sees which replica to repair while clients
 * read from the others. Counted where the reads run (each serving loop), summed for /status.
 */
export class CorruptReadCounter {
  private value: CorruptReads | undefined

  /** Counts `err` when it is a corruption error of a read of `version`. */
  note(version: number, err: unknown): void {
    if (!isStoreError(err) || !CORRUPTION_CODES.includes(err.code)) return
    this.value = { count: (this.value?.count ?? 0) + 1, lastCode: err.code, lastAt: new Date().toISOString(), lastVersion: version }
  }

  get(): CorruptReads | undefined {
    return this.value
  }
}

/** The counts of several serving loops as one: summed, with the latest failure. */
export function mergeCorruptReads(parts: readonly (CorruptReads | undefined)[]): CorruptReads | undefined {
  let merged: CorruptReads | undefined
  for (const p of parts) {
    if (p === undefined) continue
    if (merged === undefined) merged = p
    else merged = { ...(p.lastAt > merged.lastAt ? p : merged), count: merged.count + p.count }
  }
  return merged
}
