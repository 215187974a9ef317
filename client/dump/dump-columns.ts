/** The columns of a dump file: what the arrow, parquet and line sinks agree on. */
export interface OutputColumns {
  /** Binary columns (any bytes), or text columns (UTF-8, checked per record). */
  readonly keyBinary: boolean
  readonly valueBinary: boolean
  readonly keysOnly: boolean
  /** Key/value pairs of the file's own metadata (Arrow schema metadata, Parquet key_value_metadata); not in text formats. */
  readonly fileMetadata?: Readonly<Record<string, string>>
}
