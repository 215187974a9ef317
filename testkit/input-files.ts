import { writeFileSync } from 'node:fs'
import { tableFromArrays, tableToIPC } from 'apache-arrow'
// parquetjs-lite ships no types.
const parquet = require('parquetjs-lite') as {
  ParquetSchema: new (s: Record<string, { type: string; optional?: boolean }>) => unknown
  ParquetWriter: {
    openFile(schema: unknown, path: string): Promise<{ appendRow(r: Record<string, unknown>): Promise<void>; close(): Promise<void> }>
  }
}
import type { InputFormat } from '../formats/input/types'

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
      const schema = new parquet.ParquetSchema({ key: { type: 'UTF8' }, value: { type: 'UTF8' } })
      const w = await parquet.ParquetWriter.openFile(schema, path)
      for (const [key, value] of records) await w.appendRow({ key, value })
      await w.close()
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
