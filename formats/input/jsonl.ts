/**
 * JSON lines input: one JSON object per line. The key is the field --key-field (default
 * "key"); the value is the field --value-field, else the field "value", else — when the
 * object has no "value" and no field was asked for — the whole line, which is the record
 * as JSON exactly as written (no digits of large numbers lost to re-serialising).
 */
import { atLine, badInput, FieldError, reasonOf } from './input-error'
import { readLineBatches } from './lines'
import { fieldKey, fieldValue, type FieldBytes } from './row-value'
import type { InputRecord, KeyKind, ReadOptions, ValueKind } from './types'

export async function* readJsonl(path: string, opts: ReadOptions = {}): AsyncGenerator<InputRecord> {
  const keyField = opts.keyField ?? 'key'
  const valueField = opts.valueField
  const signal = opts.signal
  signal?.throwIfAborted()
  const batches = readLineBatches(path, { start: opts.start, end: opts.end, signal, blankWhitespace: true })
  for await (const { buf, base, firstLine, count, starts, ends } of batches) {
    for (let i = 0; i < count; i++) {
      if (signal?.aborted) signal.throwIfAborted()
      const s = starts[i]!
      const e = ends[i]!
      const line = firstLine + i
      let parsed: unknown
      try {
        parsed = JSON.parse(buf.toString('utf8', s, e))
      } catch (err) {
        throw badInput(atLine(path, line), `invalid JSON: ${reasonOf(err)}`, err)
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw badInput(atLine(path, line), `expected a JSON object, got ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : `a ${typeof parsed}`}`)
      }
      const obj = parsed as Record<string, unknown>
      let key: FieldBytes<KeyKind>
      let value: FieldBytes<ValueKind>
      try {
        key = fieldKey(Object.hasOwn(obj, keyField) ? obj[keyField] : undefined, keyField)
        if (valueField !== undefined) {
          if (!Object.hasOwn(obj, valueField)) throw new FieldError(`missing value field '${valueField}'`)
          value = fieldValue(obj[valueField])
        } else if (Object.hasOwn(obj, 'value')) {
          value = fieldValue(obj.value)
        } else {
          value = { bytes: trimmed(buf, s, e), kind: 'json' }
        }
      } catch (err) {
        if (err instanceof FieldError) throw badInput(atLine(path, line), err.message)
        throw err
      }
      yield { key: key.bytes, value: value.bytes, keyKind: key.kind, valueKind: value.kind, source: { path, line }, order: base + s }
    }
  }
}

/** The line without the JSON whitespace around it. */
export function trimmed(buf: Buffer, s: number, e: number): Buffer {
  while (s < e && isJsonSpace(buf[s]!)) s++
  while (e > s && isJsonSpace(buf[e - 1]!)) e--
  return buf.subarray(s, e)
}

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a
}
