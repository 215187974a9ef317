/**
 * Parquet input. The key is the column --key-field (default "key"), the value the column
 * --value-field, else "value", else the whole row as a JSON object. Each column's bytes
 * follow its type (parquet/column-type.ts); a NULL value is the empty value of its
 * column's kind: zero bytes for text and binary columns, JSON `null` for the others. A
 * NULL key is an error naming the row.
 *
 * Rows are read a row group at a time and, within it, a page at a time per column
 * (parquet/column-cursor.ts); a split reads row groups [groupStart, groupEnd) and keeps
 * the rows' numbers in the whole file, so any cut gives the same records as one reader.
 */
import { ScratchBuffer } from '../../common/working-memory'
import { atRow, badInput, FieldError, libraryFailure } from './input-error'
import { isSupportedCodec } from './parquet/codecs'
import { ColumnCursor, type PlainRun } from './parquet/column-cursor'
import { columnType, type ColumnType, type RawValue } from './parquet/column-type'
import { openParquet, type ParquetFile } from './parquet/file'
import type { SchemaTree } from './parquet/hyparquet'
import { NESTED_TYPE, NestedColumn } from './parquet/nested'
import { PageReader } from './parquet/pages'
import { keyProblem } from './row-value'
import type { InputRecord, KeyKind, ReadOptions, ValueKind } from './types'

interface PlannedColumn {
  readonly name: string
  readonly type: ColumnType
  /** A top-level primitive column (read page by page), or a nested one (read per row group). */
  readonly flat: boolean
}

interface OpenColumn {
  readonly column: PlannedColumn
  readonly cursor: ColumnCursor | NestedColumn
}

const EMPTY = Buffer.alloc(0)
const JSON_NULL = Buffer.from('null')

/**
 * Rows [from, to) of one row group that every open column has decoded: the unit both
 * front ends (records, batches) walk. `bytes` gives a row's key and value, or throws
 * the input error naming the row.
 */
export interface ParquetRowSpan {
  readonly from: number
  readonly to: number
  /** Row number in the whole file of the group's row 0. */
  readonly base: number
  readonly keyKind: KeyKind
  readonly valueKind: ValueKind
  bytes(row: number): [key: Buffer, value: Buffer]
  /** Set when the key and value columns are stored bytes in PLAIN pages (see PlainRuns). */
  readonly runs?: PlainRuns
}

/**
 * The span's key and value columns as PLAIN byte-array pages whose bytes are the record's
 * bytes (text or binary columns): the batch reader copies a run of rows as one range per
 * column and checks UTF-8 once per range. Rows it cannot take that way (nulls, bad keys,
 * invalid text) it takes through `bytes`, which names the row's problem.
 */
export interface PlainRuns {
  readonly key: PlainRun
  readonly value: PlainRun
  readonly keyUtf8: boolean
  readonly valueUtf8: boolean
}

/** The records of a Parquet file (or a split of row groups), one object per row. */
export async function* readParquet(path: string, opts: ReadOptions = {}): AsyncGenerator<InputRecord> {
  const signal = opts.signal
  for await (const span of readParquetSpans(path, opts)) {
    const { keyKind, valueKind } = span
    for (let row = span.from; row < span.to; row++) {
      if (signal?.aborted) signal.throwIfAborted()
      const [key, value] = span.bytes(row)
      const at = span.base + row
      yield { key, value, keyKind, valueKind, source: { path, row: at }, order: at }
    }
  }
}

/**
 * Whether a span's bytes may live in buffers the reader reuses for the next pages
 * ('reuse-pages': the batch reader, which copies every row before it asks for more; no
 * fresh memory per page) or must stay valid as long as they are referenced ('fresh').
 */
export type SpanReuse = 'fresh' | 'reuse-pages'

/**
 * The rows of a Parquet file as spans of decoded rows: the batch reader copies each span's
 * bytes without an object or an await per row.
 */
export async function* readParquetSpans(path: string, opts: ReadOptions = {}, reuse: SpanReuse = 'fresh'): AsyncGenerator<ParquetRowSpan> {
  if (opts.start !== undefined || opts.end !== undefined) {
    throw new RangeError('Parquet files cannot be read by byte range; split them by row group')
  }
  const signal = opts.signal
  signal?.throwIfAborted()
  const file = await openParquet(path)
  if (file === undefined) return
  try {
    const { key, value, row: wholeRow } = planColumns(file, path, opts)
    const keyKind = key.type.keyKind as KeyKind
    const valueKind: ValueKind = value?.type.valueKind ?? 'json'
    const groups = file.metadata.row_groups.length
    const first = opts.groupStart ?? 0
    const end = Math.min(opts.groupEnd ?? groups, groups)
    if (!Number.isSafeInteger(first) || first < 0 || end < first) throw new RangeError(`bad row group range [${first}, ${end})`)
    const columns = value !== undefined ? (value.name === key.name ? [key] : [key, value]) : [key, ...wholeRow.filter((c) => c !== key)]
    // One window and one page buffer per column for the whole split, reused row group
    // after row group (working memory is not counted by V8: buffers dropped per row group
    // would pile up until a collection happened to run).
    const buffers = columns.map(() => (reuse === 'reuse-pages' ? { window: new ScratchBuffer(), page: new ScratchBuffer() } : undefined))
    for (let g = first; g < end; g++) {
      const rows = file.groupRows[g]!
      const base = file.groupStarts[g]!
      const open = columns.map((column, i) => openColumn(file, path, g, column, buffers[i]))
      const keyCursor = open[0]!.cursor
      const valueCursor = value === undefined ? undefined : open.find((c) => c.column === value)!.cursor
      const rowCursors = value === undefined ? wholeRow.map((c) => open.find((o) => o.column === c)!) : []
      const bytes = (row: number): [Buffer, Buffer] => {
        try {
          if (keyCursor.isNull(row)) throw new FieldError(`key column '${key.name}' is null`)
          const keyBytes = key.type.key(keyCursor.raw(row) as RawValue)
          const problem = keyProblem(keyBytes)
          if (problem !== undefined) throw new FieldError(problem)
          if (valueCursor === undefined) return [keyBytes, Buffer.from(rowJson(rowCursors, row), 'utf8')]
          if (valueCursor.isNull(row)) return [keyBytes, valueKind === 'json' ? JSON_NULL : EMPTY]
          return [keyBytes, value!.type.value(valueCursor.raw(row) as RawValue)]
        } catch (err) {
          if (err instanceof FieldError) throw badInput(atRow(path, base + row), err.message)
          throw err
        }
      }
      let row = 0
      while (row < rows) {
        for (const c of open) {
          while (c.cursor.available <= row) {
            let more: boolean
            try {
              more = await c.cursor.advance()
            } catch (err) {
              throw libraryFailure(atRow(path, base + row), `cannot read Parquet data of column '${c.column.name}'`, err)
            }
            if (!more) {
              throw badInput(
                atRow(path, base + row),
                `column '${c.column.name}' ends after ${c.cursor.available} of its row group's ${rows} rows`,
              )
            }
          }
        }
        let limit = rows
        for (const c of open) limit = Math.min(limit, c.cursor.available)
        const runs = plainRuns(keyCursor, key.type, valueCursor, value?.type)
        yield { from: row, to: limit, base, keyKind, valueKind, bytes, ...(runs ? { runs } : {}) }
        row = limit
      }
    }
  } finally {
    await file.handle.close()
  }
}

function plainRuns(
  keyCursor: ColumnCursor | NestedColumn,
  keyType: ColumnType,
  valueCursor: ColumnCursor | NestedColumn | undefined,
  valueType: ColumnType | undefined,
): PlainRuns | undefined {
  if (!(keyCursor instanceof ColumnCursor) || !(valueCursor instanceof ColumnCursor)) return undefined
  if (keyType.storedBytes === undefined || valueType?.storedBytes === undefined) return undefined
  const key = keyCursor.plainRun()
  const value = valueCursor.plainRun()
  if (key === undefined || value === undefined) return undefined
  return { key, value, keyUtf8: keyType.storedBytes === 'utf8', valueUtf8: valueType.storedBytes === 'utf8' }
}

function rowJson(columns: readonly OpenColumn[], row: number): string {
  let out = '{'
  for (let i = 0; i < columns.length; i++) {
    const { column, cursor } = columns[i]!
    const text = cursor.isNull(row) ? 'null' : column.type.json(cursor.raw(row) as RawValue)
    out += `${i === 0 ? '' : ','}${JSON.stringify(column.name)}:${text}`
  }
  return `${out}}`
}

/** Key column, value column (or undefined for the whole row) and the row's columns. */
function planColumns(
  file: ParquetFile,
  path: string,
  opts: ReadOptions,
): { key: PlannedColumn; value: PlannedColumn | undefined; row: PlannedColumn[] } {
  const fields = file.schema.children
  const names = fields.map((f) => f.element.name)
  const plan = (name: string): PlannedColumn => {
    const field = fields.find((f) => f.element.name === name)
    if (field === undefined) throw badInput(path, `no column '${name}'; columns are: ${listNames(names)}`)
    if (!isFlat(field)) return { name, type: NESTED_TYPE, flat: false }
    const type = columnType(field.element)
    if (typeof type === 'string') throw badInput(path, `column '${name}' has ${type}`)
    return { name, type, flat: true }
  }
  const keyName = opts.keyField ?? 'key'
  const key = plan(keyName)
  if (key.type.keyKind === undefined) {
    throw badInput(
      path,
      `key column '${keyName}' is ${key.flat ? `of type ${key.type.describe}` : 'a nested column'}; a key must be text, a number or bytes`,
    )
  }
  const valueName = opts.valueField ?? (names.includes('value') ? 'value' : undefined)
  if (valueName !== undefined) return { key, value: valueName === keyName ? key : plan(valueName), row: [] }
  return { key, value: undefined, row: names.map((name) => (name === keyName ? key : plan(name))) }
}

function isFlat(field: SchemaTree): boolean {
  return field.children.length === 0 && field.element.repetition_type !== 'REPEATED'
}

/** Buffers a column's cursor reuses from page to page (see SpanReuse). */
interface ColumnBuffers {
  readonly window: ScratchBuffer
  readonly page: ScratchBuffer
}

function openColumn(file: ParquetFile, path: string, group: number, column: PlannedColumn, buffers: ColumnBuffers | undefined): OpenColumn {
  const rows = file.groupRows[group]!
  if (!column.flat) {
    return { column, cursor: new NestedColumn(file.handle, file.size, file.metadata, column.name, file.groupStarts[group]!, rows) }
  }
  const chunk = file.metadata.row_groups[group]!.columns.find((c) => c.meta_data?.path_in_schema.join('.') === column.name)
  const meta = chunk?.meta_data
  if (meta === undefined) throw badInput(path, `row group ${group} has no data for column '${column.name}'`)
  if (!isSupportedCodec(meta.codec))
    throw badInput(path, `column '${column.name}' is compressed with ${meta.codec}, which rostore does not read`)
  const dictionary =
    meta.dictionary_page_offset !== undefined && meta.dictionary_page_offset > 0n ? Number(meta.dictionary_page_offset) : undefined
  const start = dictionary !== undefined && dictionary < Number(meta.data_page_offset) ? dictionary : Number(meta.data_page_offset)
  const length = Number(meta.total_compressed_size)
  if (start + length > file.size)
    throw badInput(path, `column '${column.name}' of row group ${group} runs past the end of the file (cut short?)`)
  const element = file.schema.children.find((f) => f.element.name === column.name)!.element
  const pages = new PageReader(file.handle, start, length, buffers?.window)
  return { column, cursor: new ColumnCursor(pages, element, meta, meta.codec, buffers?.page) }
}

/** Column names for messages, cut short for very wide files. */
function listNames(names: readonly string[]): string {
  const shown = names.slice(0, 20).join(', ')
  return names.length > 20 ? `${shown}, … (${names.length} columns)` : shown
}
