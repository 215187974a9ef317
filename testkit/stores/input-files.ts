import { rmSync, writeFileSync } from 'node:fs'
import { tableFromArrays, tableToIPC } from 'apache-arrow'
import type { InputFormat } from '../../formats/input/types'
import { sqlString, writeParquetWithDuckdb } from './duckdb'

/** Writes `records` as an input file of `format` with fields "key" and "value". */
export async function writeInput(path: string, format: InputFormat, records: readonly (readonly [string, string])[]): Promise<void> {
  switch (format) {
    case 'tsv':
      writeFileSync(path, records.map(([k, v]) => `${k}\t${v}\n`).join(''))
      return
    case 'csv':
      writeFileSync(path, 'key,value\r\n' + records.map(([k, v]) => `${csvField(k)},${csvField(v)}\r\n`).join(''))
      return
    case 'jsonl':
      writeFileSync(path, records.map(([k, v]) => JSON.stringify({ key: k, value: v, extra: 1 }) + '\n').join(''))
      return
    case 'parquet': {
      // Written by DuckDB from JSON lines, row groups of 2048 rows (so larger inputs split).
      const json = `${path}.input.jsonl`
      writeFileSync(json, records.map(([key, value]) => JSON.stringify({ key, value }) + '\n').join(''))
      try {
        const source = `read_json(${sqlString(json)}, format = 'newline_delimited', columns = {'key': 'VARCHAR', 'value': 'VARCHAR'})`
        await writeParquetWithDuckdb(path, `SELECT key, value FROM ${source}`, { rowGroupSize: 2048 })
      } finally {
        rmSync(json, { force: true })
      }
      return
    }
    case 'arrow': {
      const table = tableFromArrays({ key: records.map((r) => r[0]), value: records.map((r) => r[1]) })
      writeFileSync(path, tableToIPC(table, 'file'))
      return
    }
  }
}

function csvField(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}
