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
      let record: { key: FieldBytes<KeyKind>; value: FieldBytes<ValueKind> }
      try {
        record = parseJsonLine(buf, s, e, keyField, valueField)
      } catch (err) {
        if (err instanceof JsonLineError) throw badInput(atLine(path, line), err.message, err.cause)
        throw err
      }
      const { key, value } = record
      yield { key: key.bytes, value: value.bytes, keyKind: key.kind, valueKind: value.kind, source: { path, line }, order: base + s }
    }
  }
}

/** The line without the JSON whitespace around it. */
/** A line that is not a usable record; the caller says where it is. */
export class JsonLineError extends Error {}

/**
 * Key and value of one JSON line (bytes s..e of buf); shared with the Hadoop Streaming
 * mapper, which reads the same lines from stdin. Throws JsonLineError with the reason.
 */
export function parseJsonLine(
  buf: Buffer,
  s: number,
  e: number,
  keyField: string,
  valueField: string | undefined,
): { key: FieldBytes<KeyKind>; value: FieldBytes<ValueKind> } {
  let parsed: unknown
  try {
    parsed = JSON.parse(buf.toString('utf8', s, e))
  } catch (err) {
    throw new JsonLineError(`invalid JSON: ${reasonOf(err)}`, { cause: err })
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new JsonLineError(
      `expected a JSON object, got ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : `a ${typeof parsed}`}`,
    )
  }
  const obj = parsed as Record<string, unknown>
  try {
    const key = fieldKey(Object.hasOwn(obj, keyField) ? obj[keyField] : undefined, keyField)
    if (valueField !== undefined) {
      if (!Object.hasOwn(obj, valueField)) throw new FieldError(`missing value field '${valueField}'`)
      return { key, value: fieldValue(obj[valueField]) }
    }
    if (Object.hasOwn(obj, 'value')) return { key, value: fieldValue(obj.value) }
    return { key, value: { bytes: trimmed(buf, s, e), kind: 'json' } }
  } catch (err) {
    if (err instanceof FieldError) throw new JsonLineError(err.message)
    throw err
  }
}

export function trimmed(buf: Buffer, s: number, e: number): Buffer {
  while (s < e && isJsonSpace(buf[s]!)) s++
  while (e > s && isJsonSpace(buf[e - 1]!)) e--
  return buf.subarray(s, e)
}

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a
}
