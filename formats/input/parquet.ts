/**
 * Parquet input, through parquetjs-lite. The key is the column --key-field (default
 * "key"), the value the column --value-field, else "value", else the whole row as JSON.
 * Text columns (UTF8) give 'string' bytes, plain BYTE_ARRAY columns 'bytes', everything
 * else (numbers, INT64 as bigint, JSON, nested groups) JSON text; see row-value.ts.
 *
 * Library quirks handled here: it throws strings as often as Errors; its statistics
 * decoding fails on INT64 timestamp columns (so statistics are not decoded, and only the
 * needed columns are read when key and value are plain columns); an empty row group
 * yields `undefined` rather than a row.
 */
import { stat } from 'node:fs/promises'
import { atRow, badInput, FieldError, libraryFailure, refuseRange } from './input-error'
import { fieldKey, fieldValue, toJsonText, type FieldBytes } from './row-value'
import type { InputRecord, KeyKind, ReadOptions, ValueKind } from './types'

/** The part of parquetjs-lite used here (it ships no type declarations). */
interface ParquetField {
  readonly name: string
  readonly fields?: Readonly<Record<string, ParquetField>>
}
interface ParquetCursor {
  next(): Promise<Record<string, unknown> | null | undefined>
}
interface ParquetReader {
  getSchema(): { readonly fields: Readonly<Record<string, ParquetField>> }
  getCursor(columns?: string[]): ParquetCursor
  close(): Promise<void>
}
interface ParquetLib {
  readonly ParquetReader: { openFile(path: string, options?: { rawStatistics?: boolean }): Promise<ParquetReader> }
}
const parquet = require('parquetjs-lite') as ParquetLib

export async function* readParquet(path: string, opts: ReadOptions = {}): AsyncGenerator<InputRecord> {
  refuseRange('Parquet', opts)
  const signal = opts.signal
  signal?.throwIfAborted()
  const keyField = opts.keyField ?? 'key'
  let reader: ParquetReader | undefined
  try {
    try {
      // An empty file is an input with no rows (a job that wrote nothing), not a broken one.
      if ((await stat(path)).size === 0) return
      reader = await parquet.ParquetReader.openFile(path, { rawStatistics: true })
    } catch (err) {
      throw libraryFailure(path, 'not a readable Parquet file', err)
    }
    const fields = reader.getSchema().fields
    const names = Object.keys(fields)
    const column = (name: string): string => {
      if (!Object.hasOwn(fields, name)) throw badInput(path, `no column '${name}'; columns are: ${names.join(', ')}`)
      return name
    }
    column(keyField)
    const valueField = opts.valueField !== undefined ? column(opts.valueField) : Object.hasOwn(fields, 'value') ? 'value' : undefined
    // Reading only the needed columns is faster and avoids columns the library cannot
    // decode; it matches column paths exactly, so it only works for top-level leaves.
    const wanted = valueField === undefined ? [] : [...new Set([keyField, valueField])]
    const leaves = wanted.every((name) => fields[name]?.fields === undefined)
    const cursor = reader.getCursor(leaves ? wanted : [])
    for (let row = 0; ;) {
      let record: Record<string, unknown> | null | undefined
      try {
        record = await cursor.next()
      } catch (err) {
        throw libraryFailure(atRow(path, row), 'cannot read Parquet data', err)
      }
      if (record === null) break
      if (record === undefined) continue // an empty row group
      if (signal?.aborted) signal.throwIfAborted()
      let key: FieldBytes<KeyKind>
      let value: FieldBytes<ValueKind>
      try {
        key = fieldKey(record[keyField], keyField)
        value = valueField !== undefined ? fieldValue(record[valueField]) : { bytes: Buffer.from(toJsonText(record), 'utf8'), kind: 'json' }
      } catch (err) {
        if (err instanceof FieldError) throw badInput(atRow(path, row), err.message)
        throw err
      }
      yield { key: key.bytes, value: value.bytes, keyKind: key.kind, valueKind: value.kind, source: { path, row }, order: row }
      row++
    }
  } finally {
    await reader?.close()
  }
}
