/** The columns of a dump file: what the arrow, parquet and line sinks agree on. */
export interface OutputColumns {
  /** Binary columns (any bytes), or text columns (UTF-8, checked per record). */
  readonly keyBinary: boolean
  readonly valueBinary: boolean
  readonly keysOnly: boolean
}
