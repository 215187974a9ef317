/** What every input reader yields: one key/value pair, already turned into bytes. */

/** How a value's bytes came about; the builder records it as the store's serializer. */
export type ValueKind = 'string' | 'json' | 'bytes'
/** Keys are UTF-8 text, except binary columns of Parquet/Arrow. */
export type KeyKind = 'string' | 'bytes'

export interface RecordSource {
  readonly path: string
  /** 1-based line number for text formats (TSV, CSV, JSON lines). */
  readonly line?: number
  /** 0-based row number for Parquet and Arrow. */
  readonly row?: number
}

export interface InputRecord {
  readonly key: Buffer
  readonly value: Buffer
  readonly keyKind: KeyKind
  readonly valueKind: ValueKind
  readonly source: RecordSource
  /**
   * Position of the record in its file, increasing in file order: the byte offset of its
   * line for text formats, the row number otherwise. Orders duplicates ("first"/"last").
   */
  readonly order: number
}

export const INPUT_FORMATS = ['tsv', 'csv', 'jsonl', 'parquet', 'arrow'] as const
export type InputFormat = (typeof INPUT_FORMATS)[number]

export interface ReadOptions {
  /** TSV: 1-based column number (default 1); others: field/column name (default "key"). */
  readonly keyField?: string
  /**
   * TSV: 1-based column number (default: everything after the first tab); others:
   * field/column name (default "value"; when the record has no such field and none was
   * asked for, the whole record as JSON).
   */
  readonly valueField?: string
  /** Byte range [start, end) of a split, for TSV and JSON lines only. */
  readonly start?: number
  readonly end?: number
  /**
   * Units [groupStart, groupEnd) of a split: row groups of a Parquet file, record batches
   * of an Arrow IPC file (file format). Rows keep their numbers in the whole file.
   */
  readonly groupStart?: number
  readonly groupEnd?: number
  readonly signal?: AbortSignal
}

/** Keys longer than this are refused at build time (and by the server as 413). */
export const MAX_KEY_BYTES = 65535
