/**
 * How the values of one Parquet leaf column become bytes, decided once per column from
 * its physical and logical type (the rule table is docs/INPUTS.md):
 *   text (STRING/UTF8, ENUM)                  'string': the UTF-8 bytes as stored (checked)
 *   UUID, DATE, TIME, TIMESTAMP, INT96        'string': ISO 8601 / canonical text
 *   binary (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY  'bytes':  the bytes as stored
 *     without a text annotation; GEOMETRY/GEOGRAPHY WKB)
 *   integers (signed, unsigned), DECIMAL       'json':   exact decimal digits
 *   FLOAT, DOUBLE, FLOAT16                    'json':   shortest round-trip digits
 *   BOOLEAN                                   'json':   true / false
 *   JSON                                      'json':   the text as stored
 * A column's kind never depends on its values, so a store's serializer does not either.
 * Keys take the text (or bytes) of string, binary, integer, decimal, float and temporal
 * columns; BOOLEAN and JSON columns are refused as keys.
 */
import { isUtf8 } from 'node:buffer'
import { FieldError } from '../input-error'
import type { KeyKind, ValueKind } from '../types'
import {
  bigintFromBytes,
  dateText,
  decimalText,
  float16Value,
  float32Text,
  jsonNumber,
  timestampText,
  timeText,
  uuidText,
  type TimeUnit,
} from '../typed-text'
import type { SchemaElement } from './hyparquet'

/** A decoded non-null value: Buffer for byte arrays, number, bigint (INT64, INT96) or boolean. */
export type RawValue = Buffer | number | bigint | boolean

export interface ColumnType {
  /** The type as a user knows it, for messages: "STRING", "DECIMAL(10,2)", "INT64". */
  readonly describe: string
  readonly valueKind: ValueKind
  /** Undefined for types that cannot be keys. */
  readonly keyKind: KeyKind | undefined
  /** Key bytes (text or bytes per keyKind); only called when keyKind is set. */
  key(raw: RawValue): Buffer
  /** Value bytes of kind valueKind. */
  value(raw: RawValue): Buffer
  /** JSON text of the value, for whole-row values. */
  json(raw: RawValue): string
  /**
   * Set when key() and value() return the stored bytes themselves: 'utf8' after checking
   * them (text), 'raw' as they are (binary). The batch reader then copies runs of rows
   * without a call per row (record-batch.ts).
   */
  readonly storedBytes?: 'utf8' | 'raw'
}

const latin1 = (text: string): Buffer => Buffer.from(text, 'latin1')

function text(describe: string, name: string): ColumnType {
  const checked = (raw: RawValue): Buffer => {
    const bytes = raw as Buffer
    if (!isUtf8(bytes)) throw new FieldError(`invalid UTF-8 in ${describe} column '${name}'`)
    return bytes
  }
  return {
    describe,
    valueKind: 'string',
    keyKind: 'string',
    storedBytes: 'utf8',
    key: checked,
    value: checked,
    json: (raw) => JSON.stringify(checked(raw).toString('utf8')),
  }
}

function binary(describe: string): ColumnType {
  return {
    describe,
    valueKind: 'bytes',
    keyKind: 'bytes',
    storedBytes: 'raw',
    key: (raw) => raw as Buffer,
    value: (raw) => raw as Buffer,
    json: (raw) => JSON.stringify((raw as Buffer).toString('base64')),
  }
}

/** A type whose value is text (kind 'string'), also as a key, and a JSON string in rows. */
function textual(describe: string, toText: (raw: RawValue) => string): ColumnType {
  return {
    describe,
    valueKind: 'string',
    keyKind: 'string',
    key: (raw) => Buffer.from(toText(raw), 'utf8'),
    value: (raw) => Buffer.from(toText(raw), 'utf8'),
    json: (raw) => JSON.stringify(toText(raw)),
  }
}

/** A number-like type: decimal text as key, JSON number as value. */
function numeric(describe: string, toText: (raw: RawValue) => string, finite: (raw: RawValue) => boolean = () => true): ColumnType {
  return {
    describe,
    valueKind: 'json',
    keyKind: 'string',
    key: (raw) => {
      if (!finite(raw)) throw new FieldError(`key is ${toText(raw)}, not a usable key`)
      return latin1(toText(raw))
    },
    value: (raw) => latin1(finite(raw) ? toText(raw) : 'null'),
    json: (raw) => (finite(raw) ? toText(raw) : 'null'),
  }
}

const BOOLEAN: ColumnType = {
  describe: 'BOOLEAN',
  valueKind: 'json',
  keyKind: undefined,
  key: () => {
    throw new TypeError('BOOLEAN columns are not keys')
  },
  value: (raw) => latin1(raw === true ? 'true' : 'false'),
  json: (raw) => (raw === true ? 'true' : 'false'),
}

const UNITS: Readonly<Record<string, TimeUnit>> = { MILLIS: 'ms', MICROS: 'us', NANOS: 'ns' }
const JULIAN_EPOCH_DAY = 2440588n
const NANOS_PER_DAY = 86400000000000n

/** An INT96 timestamp (Impala/Spark): nanoseconds of the day, then the Julian day. */
function int96Nanos(raw: bigint): bigint {
  return ((raw >> 64n) - JULIAN_EPOCH_DAY) * NANOS_PER_DAY + (raw & 0xffffffffffffffffn)
}

const asBigint = (raw: RawValue): bigint => (typeof raw === 'bigint' ? raw : BigInt(raw as number))

/** The column type of a leaf, or why rostore cannot read it. */
export function columnType(element: SchemaElement): ColumnType | string {
  const physical = element.type
  const logical = element.logical_type
  const converted = element.converted_type
  const name = element.name
  if (physical === undefined) return 'a group, not a leaf column'
  switch (logical?.type) {
    case 'STRING':
    case 'ENUM':
      return text(logical.type, name)
    case 'JSON':
      return {
        describe: 'JSON',
        valueKind: 'json',
        keyKind: undefined,
        key: () => {
          throw new TypeError('JSON columns are not keys')
        },
        value: (raw) => raw as Buffer,
        json: (raw) => (raw as Buffer).toString('utf8'),
      }
    case 'UUID':
      return textual('UUID', (raw) => uuidText(raw as Buffer))
    case 'DATE':
      return textual('DATE', (raw) => dateText(raw as number))
    case 'TIME':
      return textual(`TIME(${logical.unit})`, (raw) => timeText(asBigint(raw), UNITS[logical.unit]!))
    case 'TIMESTAMP':
      return textual(`TIMESTAMP(${logical.unit}${logical.isAdjustedToUTC ? ', UTC' : ''})`, (raw) =>
        timestampText(asBigint(raw), UNITS[logical.unit]!, logical.isAdjustedToUTC),
      )
    case 'DECIMAL':
      return decimal(physical, logical.precision, logical.scale)
    case 'INTEGER':
      return integer(physical, logical.bitWidth, logical.isSigned)
    case 'FLOAT16': {
      const f16 = (raw: RawValue): number => float16Value((raw as Buffer)[0]! | ((raw as Buffer)[1]! << 8))
      return numeric(
        'FLOAT16',
        (raw) => float32Text(f16(raw)),
        (raw) => Number.isFinite(f16(raw)),
      )
    }
    case 'GEOMETRY':
    case 'GEOGRAPHY':
      return binary(`${logical.type} (WKB)`)
    case 'NULL':
      return {
        ...binary('NULL'),
        storedBytes: undefined,
        valueKind: 'json',
        keyKind: undefined,
        value: () => latin1('null'),
        json: () => 'null',
      }
    case undefined:
      break
    default:
      return `type ${String(logical?.type)}, which rostore does not read`
  }
  switch (converted) {
    case 'UTF8':
    case 'ENUM':
      return text(converted === 'UTF8' ? 'STRING' : 'ENUM', name)
    case 'DECIMAL':
      return decimal(physical, element.precision ?? 0, element.scale ?? 0)
    case 'DATE':
      return textual('DATE', (raw) => dateText(raw as number))
    case 'TIME_MILLIS':
      return textual('TIME(MILLIS)', (raw) => timeText(asBigint(raw), 'ms'))
    case 'TIME_MICROS':
      return textual('TIME(MICROS)', (raw) => timeText(asBigint(raw), 'us'))
    case 'TIMESTAMP_MILLIS':
      return textual('TIMESTAMP(MILLIS, UTC)', (raw) => timestampText(asBigint(raw), 'ms', true))
    case 'TIMESTAMP_MICROS':
      return textual('TIMESTAMP(MICROS, UTC)', (raw) => timestampText(asBigint(raw), 'us', true))
    case 'INT_8':
    case 'INT_16':
    case 'INT_32':
    case 'INT_64':
    case 'UINT_8':
    case 'UINT_16':
    case 'UINT_32':
    case 'UINT_64':
      return integer(physical, Number(converted.replace(/^U?INT_/, '')), !converted.startsWith('U'))
    case 'JSON':
      return columnType({ ...element, converted_type: undefined, logical_type: { type: 'JSON' } })
    case undefined:
      break
    default:
      return `type ${converted}, which rostore does not read`
  }
  switch (physical) {
    case 'BOOLEAN':
      return BOOLEAN
    case 'INT32':
    case 'INT64':
      return integer(physical, physical === 'INT32' ? 32 : 64, true)
    case 'INT96':
      return textual('INT96 timestamp', (raw) => timestampText(int96Nanos(raw as bigint), 'ns', false))
    case 'FLOAT':
      return numeric(
        'FLOAT',
        (raw) => float32Text(raw as number),
        (raw) => Number.isFinite(raw),
      )
    case 'DOUBLE':
      return numeric(
        'DOUBLE',
        (raw) => jsonNumber(String(raw), raw as number),
        (raw) => Number.isFinite(raw),
      )
    case 'BYTE_ARRAY':
      return binary('BINARY')
    case 'FIXED_LEN_BYTE_ARRAY':
      return binary(`FIXED_LEN_BYTE_ARRAY(${element.type_length ?? '?'})`)
  }
}

function integer(physical: string, bits: number, signed: boolean): ColumnType | string {
  if (physical !== 'INT32' && physical !== 'INT64') return `an integer annotation on ${physical}, which rostore does not read`
  const describe = `${signed ? '' : 'U'}INT${bits}`
  if (physical === 'INT32') {
    // Unsigned 32-bit values arrive as signed Int32 and wrap back here.
    return signed ? numeric(describe, (raw) => String(raw)) : numeric(describe, (raw) => String((raw as number) >>> 0))
  }
  return signed ? numeric(describe, (raw) => String(raw)) : numeric(describe, (raw) => BigInt.asUintN(64, raw as bigint).toString())
}

function decimal(physical: string, precision: number, scale: number): ColumnType | string {
  const describe = `DECIMAL(${precision},${scale})`
  switch (physical) {
    case 'INT32':
    case 'INT64':
      return numeric(describe, (raw) => decimalText(asBigint(raw), scale))
    case 'BYTE_ARRAY':
    case 'FIXED_LEN_BYTE_ARRAY':
      return numeric(describe, (raw) => decimalText(bigintFromBytes(raw as Buffer), scale))
    default:
      return `DECIMAL on ${physical}, which rostore does not read`
  }
}
