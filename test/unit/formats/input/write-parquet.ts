/** Writing Parquet test files with parquetjs-lite, which ships no type declarations. */

export type ParquetColumn = { type: string; optional?: boolean } | { fields: Record<string, ParquetColumn>; optional?: boolean }

interface ParquetWriter {
  appendRow(row: Record<string, unknown>): Promise<void>
  close(): Promise<void>
}
interface ParquetLib {
  ParquetSchema: new (columns: Record<string, ParquetColumn>) => object
  ParquetWriter: { openFile(schema: object, path: string, opts?: { rowGroupSize?: number }): Promise<ParquetWriter> }
}

const parquet = require('parquetjs-lite') as ParquetLib

export async function writeParquet(
  path: string,
  columns: Record<string, ParquetColumn>,
  rows: Array<Record<string, unknown>>,
  rowGroupSize?: number,
): Promise<string> {
  const writer = await parquet.ParquetWriter.openFile(
    new parquet.ParquetSchema(columns),
    path,
    rowGroupSize === undefined ? {} : { rowGroupSize },
  )
  for (const row of rows) await writer.appendRow(row)
  await writer.close()
  return path
}
