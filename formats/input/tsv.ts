/**
 * TSV input: `key<TAB>value` per line. By default the key is column 1 and the value is
 * everything after the first tab, tabs included. With --key-field N / --value-field N
 * (1-based column numbers) the line is split on every tab; a key column other than 1
 * without --value-field leaves as value every other column, tab-separated, in order.
 *
 * Keys and values are slices of the read chunk, never strings: this loop runs once per
 * input line of the build.
 */
import { StoreError } from '../../common/errors'
import { atLine, badInput } from './input-error'
import { readLineBatches } from './lines'
import { keyProblem } from './row-value'
import { MAX_KEY_BYTES, type InputRecord, type ReadOptions } from './types'

const TAB = 0x09

/** Which columns hold key and value; `value` undefined means "all but the key column". */
interface Columns {
  readonly key: number
  readonly value: number | undefined
}

export async function* readTsv(path: string, opts: ReadOptions = {}): AsyncGenerator<InputRecord> {
  const columns = tsvColumns(opts)
  const signal = opts.signal
  signal?.throwIfAborted()
  const batches = readLineBatches(path, { start: opts.start, end: opts.end, signal, blankWhitespace: false })
  for await (const { buf, base, firstLine, count, starts, ends } of batches) {
    for (let i = 0; i < count; i++) {
      if (signal?.aborted) signal.throwIfAborted()
      const s = starts[i]!
      const e = ends[i]!
      let key: Buffer
      let value: Buffer
      if (columns === undefined) {
        const tab = buf.indexOf(TAB, s)
        if (tab === -1 || tab >= e) throw badInput(atLine(path, firstLine + i), 'no tab separator')
        key = buf.subarray(s, tab)
        value = buf.subarray(tab + 1, e)
      } else {
        const picked = pickColumns(buf, s, e, columns)
        if (typeof picked === 'string') throw badInput(atLine(path, firstLine + i), picked)
        key = picked.key
        value = picked.value
      }
      if (key.length === 0 || key.length > MAX_KEY_BYTES) {
        throw badInput(atLine(path, firstLine + i), keyProblem(key) ?? 'bad key')
      }
      yield { key, value, keyKind: 'string', valueKind: 'string', source: { path, line: firstLine + i }, order: base + s }
    }
  }
}

/** Parsed column options, or undefined for the default (and fastest) key<TAB>rest split. */
export function tsvColumns(opts: ReadOptions): Columns | undefined {
  if (opts.keyField === undefined && opts.valueField === undefined) return undefined
  const key = opts.keyField === undefined ? 1 : columnNumber('--key-field', opts.keyField)
  const value = opts.valueField === undefined ? undefined : columnNumber('--value-field', opts.valueField)
  if (key === 1 && value === undefined) return undefined
  return { key, value }
}

function columnNumber(option: string, text: string): number {
  if (!/^[1-9][0-9]{0,8}$/.test(text)) {
    throw new StoreError('RO_BAD_OPTION', `${option} for TSV input is a column number (1 is the first), not '${text}'`)
  }
  return Number(text)
}

const tabs: number[] = []

/** Key and value of the line buf[s, e) split on every tab, or why that is impossible. */
export function pickColumns(buf: Buffer, s: number, e: number, columns: Columns): { key: Buffer; value: Buffer } | string {
  // tabs[c] is the position of the tab after column c+1; a virtual tab before column 1.
  tabs.length = 0
  tabs.push(s - 1)
  for (let t = buf.indexOf(TAB, s); t !== -1 && t < e; t = buf.indexOf(TAB, t + 1)) tabs.push(t)
  tabs.push(e)
  const have = tabs.length - 1
  if (have === 1) return 'no tab separator'
  const cell = (n: number): Buffer => buf.subarray(tabs[n - 1]! + 1, tabs[n]!)
  if (columns.key > have) return `line has ${have} columns, no column ${columns.key} for the key`
  const key = cell(columns.key)
  if (columns.value !== undefined) {
    if (columns.value > have) return `line has ${have} columns, no column ${columns.value} for the value`
    return { key, value: cell(columns.value) }
  }
  // Every column but the key (never column 1 here: that is the fast path): the bytes
  // before the tab that precedes the key, then those from the tab that follows it.
  const before = buf.subarray(s, tabs[columns.key - 1]!)
  if (columns.key === have) return { key, value: before }
  return { key, value: Buffer.concat([before, buf.subarray(tabs[columns.key]!, e)]) }
}
