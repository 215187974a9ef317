/**
 * CSV input (RFC 4180): a header row names the columns; the key is the column --key-field
 * (default "key"), the value the column --value-field, else "value", else — when there is
 * no "value" column and none was asked for — the whole row as a JSON object of strings.
 * All CSV fields are text, so values are kind 'string' (or 'json' for whole rows).
 * As in the line formats, blank lines are allowed only at the end of the file.
 */
import { isUtf8 } from 'node:buffer'
import { atLine, badInput, refuseRange, wrapFileError } from './input-error'
import { CsvRowParser, type CsvRow } from './csv-rows'
import { openInput, type InputHandle } from './input-file'
import { keyProblem } from './row-value'
import type { InputRecord, ReadOptions } from './types'

const CHUNK_BYTES = 1 << 20

export async function* readCsv(path: string, opts: ReadOptions = {}): AsyncGenerator<InputRecord> {
  refuseRange('CSV', opts)
  const signal = opts.signal
  signal?.throwIfAborted()
  let file: InputHandle | undefined
  try {
    file = await openInput(path)
    const parser = new CsvRowParser(path)
    const records = new CsvRecords(path, opts.keyField ?? 'key', opts.valueField)
    const stream = file.createReadStream({ start: 0, highWaterMark: CHUNK_BYTES, autoClose: false })
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      for (const row of parser.push(chunk)) {
        signal?.throwIfAborted()
        const rec = records.take(row)
        if (rec !== undefined) yield rec
      }
    }
    for (const row of parser.finish()) {
      signal?.throwIfAborted()
      const rec = records.take(row)
      if (rec !== undefined) yield rec
    }
  } catch (err) {
    throw wrapFileError(path, err)
  } finally {
    await file?.close()
  }
}

interface Header {
  readonly names: readonly string[]
  readonly key: number
  /** Column of the value, or -1 for "the whole row as JSON". */
  readonly value: number
}

/** Turns parsed rows into records: the first row is the header, blank rows must be trailing. */
export class CsvRecords {
  private header: Header | undefined
  private pendingBlank = 0

  constructor(
    private readonly path: string,
    private readonly keyField: string,
    private readonly valueField: string | undefined,
  ) {}

  take(row: CsvRow): InputRecord | undefined {
    if (row.blank) {
      if (this.pendingBlank === 0) this.pendingBlank = row.line
      return undefined
    }
    if (this.pendingBlank !== 0) throw badInput(atLine(this.path, this.pendingBlank), 'empty line')
    if (this.header === undefined) {
      this.header = this.readHeader(row)
      return undefined
    }
    const { names, key: keyAt, value: valueAt } = this.header
    const where = (): string => atLine(this.path, row.line)
    if (row.fields.length !== names.length) {
      throw badInput(where(), `expected ${names.length} fields (${listNames(names)}), got ${row.fields.length}`)
    }
    const key = row.fields[keyAt]!
    if (!isUtf8(key)) throw badInput(where(), `invalid UTF-8 in column '${names[keyAt]}'`)
    const problem = keyProblem(key)
    if (problem !== undefined) throw badInput(where(), problem)
    const source = { path: this.path, line: row.line }
    if (valueAt >= 0) {
      const value = row.fields[valueAt]!
      if (!isUtf8(value)) throw badInput(where(), `invalid UTF-8 in column '${names[valueAt]}'`)
      return { key, value, keyKind: 'string', valueKind: 'string', source, order: row.offset }
    }
    // A prototype-less object, so a column named "__proto__" is just a column.
    const whole: Record<string, string> = Object.create(null) as Record<string, string>
    for (let c = 0; c < names.length; c++) {
      const field = row.fields[c]!
      if (!isUtf8(field)) throw badInput(where(), `invalid UTF-8 in column '${names[c]}'`)
      whole[names[c]!] = field.toString('utf8')
    }
    const value = Buffer.from(JSON.stringify(whole), 'utf8')
    return { key, value, keyKind: 'string', valueKind: 'json', source, order: row.offset }
  }

  private readHeader(row: CsvRow): Header {
    const where = atLine(this.path, row.line)
    const names: string[] = []
    for (let c = 0; c < row.fields.length; c++) {
      const field = row.fields[c]!
      if (!isUtf8(field)) throw badInput(where, `invalid UTF-8 in header column ${c + 1}`)
      const name = field.toString('utf8')
      if (names.includes(name)) throw badInput(where, `duplicate column '${name}' in header`)
      names.push(name)
    }
    const column = (name: string): number => {
      const at = names.indexOf(name)
      if (at === -1) throw badInput(where, `no column '${name}' in header; columns are: ${listNames(names)}`)
      return at
    }
    const key = column(this.keyField)
    const value = this.valueField !== undefined ? column(this.valueField) : names.indexOf('value')
    return { names, key, value }
  }
}

/** Column names for messages, cut short for very wide files. */
function listNames(names: readonly string[]): string {
  const shown = names.slice(0, 20).join(', ')
  return names.length > 20 ? `${shown}, … (${names.length} columns)` : shown
}
