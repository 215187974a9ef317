/**
 * DuckDB (C++, its own Parquet, CSV and JSON writers) as the independent writer of test
 * and benchmark inputs: `@duckdb/node-api` is a devDependency with a prebuilt binary.
 * One in-memory database per process, opened on first use.
 */
import type { DuckDBConnection } from '@duckdb/node-api'

let connection: Promise<DuckDBConnection> | undefined

function connect(): Promise<DuckDBConnection> {
  connection ??= (async () => {
    const { DuckDBInstance } = await import('@duckdb/node-api')
    const instance = await DuckDBInstance.create(':memory:', { threads: '1' })
    return instance.connect()
  })()
  return connection
}

/** Runs statements one by one. */
export async function duckdb(...statements: string[]): Promise<void> {
  const c = await connect()
  for (const sql of statements) await c.run(sql)
}

/** Rows of a query as objects of JSON-safe values (DuckDB's own text forms for exotic types). */
export async function duckdbRows(sql: string): Promise<Array<Record<string, unknown>>> {
  const c = await connect()
  const reader = await c.runAndReadAll(sql)
  return reader.getRowObjectsJson() as unknown as Array<Record<string, unknown>>
}

/** A string as an SQL literal. */
export function sqlString(text: string): string {
  return `'${text.replace(/'/g, "''")}'`
}

/** Parquet writer options of DuckDB's COPY ... (FORMAT parquet, ...). */
export interface ParquetCopyOptions {
  /** SNAPPY (DuckDB's default), ZSTD, GZIP, UNCOMPRESSED, LZ4_RAW, BROTLI. */
  readonly codec?: 'snappy' | 'zstd' | 'gzip' | 'uncompressed' | 'lz4_raw' | 'brotli'
  /** v1 (data page v1) or v2 (data page v2 and the v2 encodings: DELTA_*, BYTE_STREAM_SPLIT). */
  readonly version?: 'v1' | 'v2'
  readonly rowGroupSize?: number
}

/** Writes the result of `query` as a Parquet file at `path`. */
export async function writeParquetWithDuckdb(path: string, query: string, o: ParquetCopyOptions = {}): Promise<string> {
  const options = [
    'FORMAT parquet',
    `COMPRESSION ${o.codec ?? 'snappy'}`,
    ...(o.version !== undefined ? [`PARQUET_VERSION ${o.version}`] : []),
    ...(o.rowGroupSize !== undefined ? [`ROW_GROUP_SIZE ${o.rowGroupSize}`] : []),
  ]
  await duckdb(`COPY (${query}) TO ${sqlString(path)} (${options.join(', ')})`)
  return path
}
