/**
 * Parquet inputs as real writers make them, for the reader and build tests: rows with
 * awkward text (quotes, newlines, tabs, non-ASCII, empty, long values that span pages),
 * NULLs, a low-cardinality column (dictionary encoded), binary and 64-bit integer
 * columns, written by DuckDB in any codec and page version with several row groups.
 * The expected bytes of every column come from the same rows, computed here, not read
 * back through any Parquet library.
 */
import { rmSync, writeFileSync } from 'node:fs'
import { sqlString, writeParquetWithDuckdb, type ParquetCopyOptions } from './duckdb'

export const PARQUET_CODECS = ['snappy', 'zstd', 'gzip', 'uncompressed', 'lz4_raw', 'brotli'] as const
export type ParquetCodec = (typeof PARQUET_CODECS)[number]

export interface TrickyRow {
  readonly key: string
  readonly value: string | null
  readonly color: string | null
  readonly bin: Buffer | null
  readonly n: bigint
}

const COLORS = ['red', 'grün', 'blue', null] as const

export function trickyRows(count: number): TrickyRow[] {
  return Array.from({ length: count }, (_, i): TrickyRow => {
    const key = i % 7 === 0 ? `clé-${i}-✓` : i % 11 === 0 ? `"quoted, ${i}"\n` : `k${i}`
    const value =
      i % 13 === 0
        ? null
        : i % 17 === 0
          ? ''
          : i % 997 === 1
            ? `long-${i}-${'x🎉'.repeat(8000)}`
            : `v${i}${'é\t"'.repeat(i % 4)}${i % 5 === 0 ? '\r\nline 2' : ''}`
    return {
      key,
      value,
      color: COLORS[i % COLORS.length]!,
      bin: i % 19 === 0 ? null : Buffer.from([i & 0xff, 0, 0xff, (i >> 8) & 0xff]),
      n: BigInt(i) * 1_000_000_007n * (i % 2 === 0 ? 1n : -1n) * 1000n,
    }
  })
}

/** The whole row as rostore writes it (every column, in order; bytes as base64, NULL as null). */
export function trickyRowJson(r: TrickyRow, valueColumn = 'value'): string {
  const bin = r.bin === null ? 'null' : JSON.stringify(r.bin.toString('base64'))
  return `{"key":${JSON.stringify(r.key)},${JSON.stringify(valueColumn)}:${JSON.stringify(r.value)},"color":${JSON.stringify(r.color)},"bin":${bin},"n":${r.n}}`
}

/**
 * Writes `rows` with DuckDB: columns key VARCHAR, value VARCHAR (named `valueColumn`),
 * color VARCHAR, bin BLOB, n BIGINT.
 */
export async function writeTrickyParquet(
  path: string,
  rows: readonly TrickyRow[],
  o: ParquetCopyOptions = {},
  valueColumn = 'value',
): Promise<string> {
  const json = `${path}.input.jsonl`
  writeFileSync(
    json,
    rows
      .map(
        (r) =>
          JSON.stringify({
            key: r.key,
            value: r.value,
            color: r.color,
            bin: r.bin === null ? null : r.bin.toString('hex'),
            n: String(r.n),
          }) + '\n',
      )
      .join(''),
  )
  const columns = `{'key': 'VARCHAR', 'value': 'VARCHAR', 'color': 'VARCHAR', 'bin': 'VARCHAR', 'n': 'VARCHAR'}`
  try {
    await writeParquetWithDuckdb(
      path,
      `SELECT key, value AS "${valueColumn}", color, from_hex(bin) AS bin, n::BIGINT AS n FROM read_json(${sqlString(json)}, format = 'newline_delimited', columns = ${columns})`,
      o,
    )
  } finally {
    rmSync(json, { force: true })
  }
  return path
}
