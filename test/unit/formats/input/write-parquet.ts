/**
 * Small Parquet test files from rows of JavaScript values, written by DuckDB (an
 * independent writer): the rows go through a JSON lines file that DuckDB reads with the
 * column types given here, then COPY ... (FORMAT parquet). Columns are nullable, as
 * DuckDB writes every column (OPTIONAL).
 */
import { rmSync, writeFileSync } from 'node:fs'
import { sqlString, writeParquetWithDuckdb, type ParquetCopyOptions } from '../../../../testkit/stores/duckdb'

/** A column's DuckDB type; BLOB values are Buffers, JSON values any JSON-able value. */
export type ParquetColumn = 'VARCHAR' | 'BLOB' | 'BIGINT' | 'INTEGER' | 'DOUBLE' | 'BOOLEAN' | 'JSON' | { struct: Record<string, string> }

function typeOf(column: ParquetColumn): string {
  if (typeof column !== 'string') {
    return `STRUCT(${Object.entries(column.struct)
      .map(([name, type]) => `"${name}" ${type}`)
      .join(', ')})`
  }
  return column === 'BLOB' || column === 'JSON' ? 'VARCHAR' : column
}

export async function writeParquet(
  path: string,
  columns: Record<string, ParquetColumn>,
  rows: ReadonlyArray<Record<string, unknown>>,
  options: ParquetCopyOptions = {},
): Promise<string> {
  const names = Object.keys(columns)
  const json = `${path}.input.jsonl`
  const lines = rows.map((row) => {
    const out: Record<string, unknown> = {}
    for (const name of names) {
      const v = row[name]
      out[name] = Buffer.isBuffer(v) ? v.toString('hex') : columns[name] === 'JSON' && v !== undefined ? JSON.stringify(v) : v
    }
    return JSON.stringify(out, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))
  })
  writeFileSync(json, lines.map((l) => `${l}\n`).join(''))
  const select = names.map((name) => {
    const q = `"${name}"`
    if (columns[name] === 'BLOB') return `from_hex(${q}) AS ${q}`
    if (columns[name] === 'JSON') return `${q}::JSON AS ${q}`
    return q
  })
  const types = names.map((name) => `${sqlString(name)}: ${sqlString(typeOf(columns[name]!))}`).join(', ')
  const source =
    rows.length === 0
      ? `SELECT ${names.map((name) => `NULL::${typeOf(columns[name]!)} AS "${name}"`).join(', ')} LIMIT 0`
      : `SELECT * FROM read_json(${sqlString(json)}, format = 'newline_delimited', columns = {${types}})`
  try {
    await writeParquetWithDuckdb(path, `SELECT ${select.join(', ')} FROM (${source})`, options)
  } finally {
    rmSync(json, { force: true })
  }
  return path
}
