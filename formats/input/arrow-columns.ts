/**
 * How the values of one Arrow column become bytes, decided once per column from its type,
 * with the same rules (and text forms, typed-text.ts) as Parquet columns: text 'string',
 * binary 'bytes', numbers and booleans 'json', dates/times/timestamps/UUIDs 'string',
 * nested values JSON; a NULL value is the empty value of the column's kind. Values are
 * read from the column's buffers, not through apache-arrow's `get()`: no string is
 * decoded to be encoded again, and timestamps keep their micro- and nanoseconds.
 */
import { isUtf8 } from 'node:buffer'
import { DataType, makeVector, TimeUnit as ArrowTimeUnit, type Data, type Field, type Vector } from 'apache-arrow'
import { FieldError } from './input-error'
import { asBuffer, toJsonText } from './row-value'
import type { KeyKind, ValueKind } from './types'
import {
  bigintFromWords,
  dateText,
  decimalText,
  float16Value,
  float32Text,
  timestampText,
  timeText,
  uuidText,
  type TimeUnit,
} from './typed-text'

export interface ArrowColumn {
  readonly describe: string
  readonly valueKind: ValueKind
  readonly keyKind: KeyKind | undefined
  isNull(data: Data, i: number): boolean
  key(data: Data, i: number): Buffer
  value(data: Data, i: number): Buffer
  json(data: Data, i: number): string
}

const UNITS: readonly TimeUnit[] = ['s', 'ms', 'us', 'ns'] // apache-arrow's TimeUnit order
const latin1 = (text: string): Buffer => Buffer.from(text, 'latin1')
const isNull = (data: Data, i: number): boolean => !data.getValid(i)

/** The bytes of variable-width value i (32- or 64-bit offsets). */
function slice(data: Data, i: number): Buffer {
  const offsets = data.valueOffsets as Int32Array | BigInt64Array
  const at = data.offset + i
  const start = Number(offsets[at])
  const end = Number(offsets[at + 1])
  return asBuffer((data.values as Uint8Array).subarray(start, end))
}

function fixed(data: Data, i: number, width: number): Buffer {
  const at = (data.offset + i) * width
  return asBuffer((data.values as Uint8Array).subarray(at, at + width))
}

/** A 64-bit integer value, from a BigInt64Array/BigUint64Array or (older layouts) pairs of Int32. */
function int64(data: Data, i: number): bigint {
  const values = data.values as BigInt64Array | BigUint64Array | Int32Array
  const at = data.offset + i
  if (values instanceof BigInt64Array || values instanceof BigUint64Array) return values[at]!
  return (BigInt(values[2 * at + 1]!) << 32n) | BigInt(values[2 * at]! >>> 0)
}

function textColumn(describe: string, bytesOf: (data: Data, i: number) => Buffer, name: string): ArrowColumn {
  const checked = (data: Data, i: number): Buffer => {
    const b = bytesOf(data, i)
    if (!isUtf8(b)) throw new FieldError(`invalid UTF-8 in ${describe} column '${name}'`)
    return b
  }
  return {
    describe,
    valueKind: 'string',
    keyKind: 'string',
    isNull,
    key: checked,
    value: checked,
    json: (d, i) => JSON.stringify(checked(d, i).toString('utf8')),
  }
}

function binaryColumn(describe: string, bytesOf: (data: Data, i: number) => Buffer): ArrowColumn {
  return {
    describe,
    valueKind: 'bytes',
    keyKind: 'bytes',
    isNull,
    key: bytesOf,
    value: bytesOf,
    json: (d, i) => JSON.stringify(bytesOf(d, i).toString('base64')),
  }
}

function textual(describe: string, toText: (data: Data, i: number) => string): ArrowColumn {
  const bytes = (d: Data, i: number): Buffer => Buffer.from(toText(d, i), 'utf8')
  return {
    describe,
    valueKind: 'string',
    keyKind: 'string',
    isNull,
    key: bytes,
    value: bytes,
    json: (d, i) => JSON.stringify(toText(d, i)),
  }
}

function numeric(
  describe: string,
  toText: (data: Data, i: number) => string,
  finite: (data: Data, i: number) => boolean = () => true,
): ArrowColumn {
  return {
    describe,
    valueKind: 'json',
    keyKind: 'string',
    isNull,
    key: (d, i) => {
      if (!finite(d, i)) throw new FieldError(`key is ${toText(d, i)}, not a usable key`)
      return latin1(toText(d, i))
    },
    value: (d, i) => latin1(finite(d, i) ? toText(d, i) : 'null'),
    json: (d, i) => (finite(d, i) ? toText(d, i) : 'null'),
  }
}

function jsonOnly(describe: string, toJson: (data: Data, i: number) => string): ArrowColumn {
  return {
    describe,
    valueKind: 'json',
    keyKind: undefined,
    isNull,
    key: () => {
      throw new TypeError(`${describe} columns are not keys`)
    },
    value: (d, i) => Buffer.from(toJson(d, i), 'utf8'),
    json: toJson,
  }
}

/** The column reader for a field, or why rostore cannot read it. */
export function arrowColumn(field: Field): ArrowColumn | string {
  const type = field.type as DataType
  const name = field.name
  if (field.metadata.get('ARROW:extension:name') === 'arrow.uuid' && DataType.isFixedSizeBinary(type) && type.byteWidth === 16) {
    return textual('UUID', (d, i) => uuidText(fixed(d, i, 16)))
  }
  if (DataType.isUtf8(type) || DataType.isLargeUtf8(type)) return textColumn(String(type), slice, name)
  if (DataType.isBinary(type) || DataType.isLargeBinary(type)) return binaryColumn(String(type), slice)
  if (DataType.isFixedSizeBinary(type)) return binaryColumn(String(type), (d, i) => fixed(d, i, type.byteWidth))
  if (DataType.isBool(type)) {
    const bit = (d: Data, i: number): boolean => {
      const at = d.offset + i
      return (((d.values as Uint8Array)[at >> 3]! >> (at & 7)) & 1) === 1
    }
    return { ...jsonOnly('Bool', (d, i) => (bit(d, i) ? 'true' : 'false')) }
  }
  if (DataType.isInt(type)) {
    if (type.bitWidth === 64)
      return numeric(String(type), (d, i) => (type.isSigned ? int64(d, i) : BigInt.asUintN(64, int64(d, i))).toString())
    return numeric(String(type), (d, i) => String((d.values as Int32Array)[d.offset + i]))
  }
  if (DataType.isFloat(type)) {
    const raw = (d: Data, i: number): number => {
      const v = (d.values as Float32Array)[d.offset + i]!
      return type.precision === 0 ? float16Value(v) : v
    }
    const finite = (d: Data, i: number): boolean => Number.isFinite(raw(d, i))
    return numeric(String(type), (d, i) => (type.precision === 2 ? String(raw(d, i)) : float32Text(raw(d, i))), finite)
  }
  if (DataType.isDecimal(type)) {
    const words = type.bitWidth / 32
    return numeric(String(type), (d, i) => decimalText(bigintFromWords(d.values as Uint32Array, (d.offset + i) * words, words), type.scale))
  }
  if (DataType.isDate(type)) {
    return textual(String(type), (d, i) =>
      dateText(
        type.unit === 0
          ? (d.values as Int32Array)[d.offset + i]!
          : Number(int64(d, i) / 86400000n - (int64(d, i) % 86400000n < 0n ? 1n : 0n)),
      ),
    )
  }
  if (DataType.isTime(type)) {
    const unit = UNITS[type.unit]!
    return textual(String(type), (d, i) =>
      timeText(type.bitWidth === 64 ? int64(d, i) : BigInt((d.values as Int32Array)[d.offset + i]!), unit),
    )
  }
  if (DataType.isTimestamp(type)) {
    const unit = UNITS[type.unit as ArrowTimeUnit]!
    const utc = type.timezone !== null && type.timezone !== undefined && type.timezone !== ''
    return textual(String(type), (d, i) => timestampText(int64(d, i), unit, utc))
  }
  if (DataType.isDictionary(type)) return dictionaryColumn(field)
  if (DataType.isNull(type)) return { ...jsonOnly('Null', () => 'null'), isNull: () => true }
  if (DataType.isStruct(type) || DataType.isList(type) || DataType.isFixedSizeList(type) || DataType.isMap(type)) {
    return jsonOnly(`nested (${String(type)})`, (d, i) => toJsonText(nestedValue(d, i)))
  }
  return `type ${String(type)}, which rostore does not read`
}

/** A dictionary column reads as its dictionary's value type, through the indices. */
function dictionaryColumn(field: Field): ArrowColumn | string {
  const type = field.type as DataType & { dictionary: DataType }
  const inner = arrowColumn({ ...field, type: type.dictionary, metadata: field.metadata, name: field.name } as Field)
  if (typeof inner === 'string') return inner
  const at = (d: Data, i: number): [Data, number] => {
    const index = Number((d.values as Int32Array)[d.offset + i])
    const dict = d.dictionary
    if (dict === undefined) throw new FieldError(`dictionary-encoded column '${field.name}' has no dictionary`)
    // A dictionary grown by delta batches is several chunks.
    let rest = index
    for (const chunk of dict.data) {
      if (rest < chunk.length) return [chunk, rest]
      rest -= chunk.length
    }
    throw new FieldError(`dictionary index ${index} past the end of the dictionary of column '${field.name}'`)
  }
  return {
    describe: `Dictionary<${inner.describe}>`,
    valueKind: inner.valueKind,
    keyKind: inner.keyKind,
    isNull: (d, i) => !d.getValid(i) || inner.isNull(...at(d, i)),
    key: (d, i) => inner.key(...at(d, i)),
    value: (d, i) => inner.value(...at(d, i)),
    json: (d, i) => inner.json(...at(d, i)),
  }
}

const vectors = new WeakMap<Data, Vector>()

/** A nested value as apache-arrow gives it (struct rows and list vectors write themselves as JSON). */
function nestedValue(data: Data, i: number): unknown {
  let vector = vectors.get(data)
  if (vector === undefined) vectors.set(data, (vector = makeVector(data)))
  return vector.get(i) as unknown
}
