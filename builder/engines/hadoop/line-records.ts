import { isUtf8 } from 'node:buffer'
import { StoreError } from '../../../common/errors'
import { CsvRecords } from '../../../formats/input/csv'
import { CsvRowParser } from '../../../formats/input/csv-rows'
import { JsonLineError, parseJsonLine } from '../../../formats/input/jsonl'
import { keyProblem, type FieldBytes } from '../../../formats/input/row-value'
import { pickColumns, tsvColumns } from '../../../formats/input/tsv'
import type { InputFormat, InputRecord, KeyKind, ValueKind } from '../../../formats/input/types'

/**
 * Text input lines as a Hadoop mapper gets them (one line, its byte offset, its file)
 * turned into the same InputRecords the file readers make, following the same rules:
 * - a '\r' before the line end is dropped, a UTF-8 byte order mark at offset 0 too;
 * - TSV and JSON lines: the whole line must be UTF-8 (CSV checks the fields it uses);
 * - blank lines (JSON lines: also lines of only spaces and tabs) are reported as 'blank',
 *   the mapper decides whether they were trailing;
 * - CSV: the line at offset 0 is the header, already known from the job spec, and every
 *   line must be a whole row (no line breaks inside quoted fields).
 * Column picking, field conversion and the CSV row rules are the readers' own functions.
 * `order` is the byte offset of the line, as in the readers; messages name the byte
 * offset since Hadoop gives mappers no line numbers.
 */
export type LineResult = InputRecord | 'blank' | 'header'

export interface LineRecordOptions {
  readonly format: InputFormat
  readonly keyField?: string
  readonly valueField?: string
  /** CSV: each input's header line bytes (BOM and line end removed), by file index. */
  readonly csvHeaders?: readonly Buffer[]
}

const CR = 0x0d
const TAB = 0x09
const SPACE = 0x20
const NL = Buffer.from('\n')

export function atOffset(file: string, offset: number): string {
  return `${file} (line at byte ${offset})`
}

function badLine(file: string, offset: number, reason: string, cause?: unknown): StoreError {
  return new StoreError('RO_BAD_INPUT', `${atOffset(file, offset)}: ${reason}`, cause === undefined ? undefined : { cause })
}

export class LineRecords {
  private readonly columns: ReturnType<typeof tsvColumns>
  private readonly csv = new Map<number, { parser: CsvRowParser; records: CsvRecords; file: string }>()

  constructor(private readonly o: LineRecordOptions) {
    if (o.format !== 'tsv' && o.format !== 'jsonl' && o.format !== 'csv') throw new RangeError(`${o.format} input is not read line by line`)
    this.columns = o.format === 'tsv' ? tsvColumns(o) : undefined
  }

  /** The record of the line buf[s, e) (no '\n') starting at byte `offset` of input `fileIndex`. */
  parse(buf: Buffer, s: number, e: number, offset: number, fileIndex: number, file: string): LineResult {
    if (e > s && buf[e - 1] === CR) e--
    if (offset === 0 && e - s >= 3 && buf[s] === 0xef && buf[s + 1] === 0xbb && buf[s + 2] === 0xbf) s += 3
    if (this.isBlank(buf, s, e)) return 'blank'
    switch (this.o.format) {
      case 'tsv':
        return this.tsv(buf, s, e, offset, file)
      case 'jsonl':
        return this.jsonl(buf, s, e, offset, file)
      default:
        return this.csvLine(buf, s, e, offset, fileIndex, file)
    }
  }

  private isBlank(buf: Buffer, s: number, e: number): boolean {
    if (s === e) return true
    if (this.o.format !== 'jsonl') return false
    for (let p = s; p < e; p++) if (buf[p] !== SPACE && buf[p] !== TAB) return false
    return true
  }

  private utf8(buf: Buffer, s: number, e: number, offset: number, file: string): void {
    if (!isUtf8(buf.subarray(s, e))) throw badLine(file, offset, 'invalid UTF-8')
  }

  /** As formats/input/tsv.ts readTsv. */
  private tsv(buf: Buffer, s: number, e: number, offset: number, file: string): InputRecord {
    this.utf8(buf, s, e, offset, file)
    let key: Buffer
    let value: Buffer
    if (this.columns === undefined) {
      const tab = buf.indexOf(TAB, s)
      if (tab === -1 || tab >= e) throw badLine(file, offset, 'no tab separator')
      key = buf.subarray(s, tab)
      value = buf.subarray(tab + 1, e)
    } else {
      const picked = pickColumns(buf, s, e, this.columns)
      if (typeof picked === 'string') throw badLine(file, offset, picked)
      key = picked.key
      value = picked.value
    }
    const problem = keyProblem(key)
    if (problem !== undefined) throw badLine(file, offset, problem)
    return { key, value, keyKind: 'string', valueKind: 'string', source: { path: file }, order: offset }
  }

  /** As formats/input/jsonl.ts readJsonl. */
  private jsonl(buf: Buffer, s: number, e: number, offset: number, file: string): InputRecord {
    this.utf8(buf, s, e, offset, file)
    const keyField = this.o.keyField ?? 'key'
    const valueField = this.o.valueField
    let record: { key: FieldBytes<KeyKind>; value: FieldBytes<ValueKind> }
    try {
      record = parseJsonLine(buf, s, e, keyField, valueField)
    } catch (err) {
      if (err instanceof JsonLineError) throw badLine(file, offset, err.message, err.cause)
      throw err
    }
    const { key, value } = record
    return { key: key.bytes, value: value.bytes, keyKind: key.kind, valueKind: value.kind, source: { path: file }, order: offset }
  }

  /** Through formats/input/csv.ts CsvRecords, one row per line. */
  private csvLine(buf: Buffer, s: number, e: number, offset: number, fileIndex: number, file: string): LineResult {
    const state = this.csvState(fileIndex, file)
    if (offset === 0) {
      // The header: known from the job spec; it must still be what the spec says.
      const header = this.o.csvHeaders?.[fileIndex]
      if (header === undefined || !header.equals(buf.subarray(s, e))) {
        throw badLine(file, offset, 'the CSV header differs from the one in the job spec: did the input change after the job was prepared?')
      }
      return 'header'
    }
    try {
      const rows = state.parser.push(Buffer.concat([buf.subarray(s, e), NL]))
      const row = rows[0]
      if (rows.length !== 1 || row === undefined) {
        throw badLine(
          file,
          offset,
          'a quoted CSV field runs past the end of the line; the hadoop engine needs CSV rows without line breaks in fields',
        )
      }
      const rec = state.records.take(row)
      if (rec === undefined) throw badLine(file, offset, 'not a CSV row')
      return { ...rec, source: { path: file }, order: offset }
    } catch (err) {
      throw relocate(err, file, offset)
    }
  }

  private csvState(fileIndex: number, file: string): { parser: CsvRowParser; records: CsvRecords; file: string } {
    let state = this.csv.get(fileIndex)
    if (state === undefined) {
      const header = this.o.csvHeaders?.[fileIndex]
      if (header === undefined) throw new StoreError('RO_BAD_OPTION', `${file}: no CSV header in the job spec for input #${fileIndex}`)
      const parser = new CsvRowParser(file)
      const records = new CsvRecords(file, this.o.keyField ?? 'key', this.o.valueField)
      const rows = parser.push(Buffer.concat([header, NL]))
      if (rows.length !== 1) throw new StoreError('RO_BAD_INPUT', `${file}: the CSV header in the job spec is not one row`)
      try {
        records.take(rows[0]!)
      } catch (err) {
        throw relocate(err, file, 0)
      }
      state = { parser, records, file }
      this.csv.set(fileIndex, state)
    }
    return state
  }
}

/** A reader's `path:line: reason` (line counted within this mapper's rows) as `path (line at byte N): reason`. */
function relocate(err: unknown, file: string, offset: number): unknown {
  if (!(err instanceof StoreError) || err.code !== 'RO_BAD_INPUT') return err
  const prefix = `${file}:`
  if (!err.message.startsWith(prefix)) return err
  const rest = err.message.slice(prefix.length).replace(/^\d+: /, '')
  return badLine(file, offset, rest, err)
}
