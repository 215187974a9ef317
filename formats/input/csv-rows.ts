/**
 * RFC 4180 rows from bytes, as a resumable state machine: chunks go in as they are read,
 * complete rows come out, so a quoted field may span any number of chunks and lines.
 *
 * It works on bytes, not text: the bytes that matter (`,` `"` CR LF) are ASCII and never
 * occur inside a UTF-8 multi-byte sequence, and a field's bytes are its UTF-8 bytes, so
 * most fields are slices of the chunk with no copy and no decoding. Checking that they
 * are UTF-8 is the caller's business (it knows which fields it uses).
 */
import { atLine, badInput } from './input-error'

export interface CsvRow {
  readonly fields: Buffer[]
  /** Line (1-based) where the row starts. */
  readonly line: number
  /** File offset of the row's first byte. */
  readonly offset: number
  /** The row was an empty line (no bytes at all, as opposed to `""`). */
  readonly blank: boolean
}

const COMMA = 0x2c
const QUOTE = 0x22
const CR = 0x0d
const LF = 0x0a

const enum State {
  /** At the start of a field (also of a row). */
  FieldStart,
  Unquoted,
  Quoted,
  /** Just after a quote inside a quoted field: either `""` or the closing quote. */
  QuoteInQuoted,
  /** After a CR that ended a field: only LF may follow. */
  AfterCr,
}

export class CsvRowParser {
  private state = State.FieldStart
  private line = 1
  private offset = 0
  private fields: Buffer[] = []
  /** Pieces of the current field from earlier chunks or split by `""` escapes. */
  private parts: Buffer[] = []
  private rowLine = 1
  private rowOffset = 0
  private rowStarted = false
  private quoteLine = 0

  constructor(private readonly path: string) {}

  /** Rows completed by this chunk. The chunk must not be modified afterwards: fields slice it. */
  push(chunk: Buffer): CsvRow[] {
    const rows: CsvRow[] = []
    const base = this.offset
    this.offset += chunk.length
    let seg = 0 // start of the current field's bytes in this chunk
    const n = chunk.length
    // Spreadsheet programs start UTF-8 CSV files with a byte order mark: not part of the header.
    const bom = base === 0 && n >= 3 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf
    for (let i = bom ? 3 : 0; i < n; i++) {
      const c = chunk[i]!
      switch (this.state) {
        case State.FieldStart:
          if (!this.rowStarted) {
            this.rowStarted = true
            this.rowLine = this.line
            this.rowOffset = base + i
          }
          if (c === COMMA) {
            this.fields.push(EMPTY)
          } else if (c === QUOTE) {
            this.state = State.Quoted
            this.quoteLine = this.line
            seg = i + 1
          } else if (c === LF) {
            this.line++
            rows.push(this.endRow(this.fields.length === 0, EMPTY))
          } else if (c === CR) {
            // CR LF at the very start of a row is a blank line, not a row of one empty field.
            if (this.fields.length > 0) this.fields.push(EMPTY)
            this.state = State.AfterCr
          } else {
            this.state = State.Unquoted
            seg = i
          }
          break
        case State.Unquoted:
          // Most bytes of a CSV file land here: skip ahead to the next byte that matters.
          while (i < n && !isSpecial(chunk[i]!)) i++
          if (i === n) break
          if (chunk[i] === COMMA) {
            this.fields.push(this.field(chunk.subarray(seg, i)))
            this.state = State.FieldStart
          } else if (chunk[i] === LF) {
            this.line++
            rows.push(this.endRow(false, this.field(chunk.subarray(seg, i))))
          } else if (chunk[i] === CR) {
            this.fields.push(this.field(chunk.subarray(seg, i)))
            this.state = State.AfterCr
          } else {
            throw badInput(atLine(this.path, this.line), 'stray quote in an unquoted field (quote the whole field and double the quote)')
          }
          break
        case State.Quoted:
          if (c === QUOTE) {
            this.parts.push(chunk.subarray(seg, i))
            this.state = State.QuoteInQuoted
          } else if (c === LF) {
            this.line++
          }
          break
        case State.QuoteInQuoted:
          if (c === QUOTE) {
            // `""`: this second quote is a literal one and starts the next piece.
            seg = i
            this.state = State.Quoted
          } else if (c === COMMA) {
            this.fields.push(this.field(EMPTY))
            this.state = State.FieldStart
          } else if (c === LF) {
            this.line++
            rows.push(this.endRow(false, this.field(EMPTY)))
          } else if (c === CR) {
            this.fields.push(this.field(EMPTY))
            this.state = State.AfterCr
          } else {
            throw badInput(
              atLine(this.path, this.line),
              'unexpected character after a closing quote (a quote inside a quoted field must be doubled)',
            )
          }
          break
        case State.AfterCr:
          if (c !== LF) throw badInput(atLine(this.path, this.line), 'carriage return not followed by a line feed')
          this.line++
          rows.push(this.endRow(this.fields.length === 0, undefined))
          break
      }
    }
    if (this.state === State.Unquoted || this.state === State.Quoted) this.parts.push(chunk.subarray(seg))
    return rows
  }

  /** Call at end of input: the last row may have no line end. */
  finish(): CsvRow[] {
    switch (this.state) {
      case State.FieldStart:
        // After a comma the row has an empty last field; after a line end there is no row.
        return this.rowStarted ? [this.endRow(false, EMPTY)] : []
      case State.Unquoted:
      case State.QuoteInQuoted:
        return [this.endRow(false, this.field(EMPTY))]
      case State.AfterCr:
        return [this.endRow(this.fields.length === 0, undefined)]
      case State.Quoted:
        throw badInput(atLine(this.path, this.quoteLine), 'unterminated quoted field')
    }
  }

  /** The current field: its earlier pieces joined with `last`. */
  private field(last: Buffer): Buffer {
    if (this.parts.length === 0) return last
    if (last.length > 0) this.parts.push(last)
    const joined = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts)
    this.parts = []
    return joined
  }

  private endRow(blank: boolean, last: Buffer | undefined): CsvRow {
    if (last !== undefined && !blank) this.fields.push(last)
    const row: CsvRow = { fields: blank ? [EMPTY] : this.fields, line: this.rowLine, offset: this.rowOffset, blank }
    this.fields = []
    this.rowStarted = false
    this.state = State.FieldStart
    return row
  }
}

const EMPTY = Buffer.alloc(0)

function isSpecial(c: number): boolean {
  return c === COMMA || c === LF || c === CR || c === QUOTE
}
