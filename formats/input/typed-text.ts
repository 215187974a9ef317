/**
 * Exact text forms of typed column values (Parquet and Arrow agree on these): decimals
 * with every digit of their scale, dates and timestamps in ISO 8601 with the precision
 * of their unit, UUIDs in canonical form, floats in their shortest round-trip form.
 * Nothing here goes through a JavaScript Date or a double where the value does not fit
 * one: years past 9999, nanoseconds and 38-digit decimals come out as written.
 */

/** `unscaled × 10^-scale` as decimal text: scale 2 gives "-1.50", "0.05"; scale ≤ 0 an integer. */
export function decimalText(unscaled: bigint, scale: number): string {
  if (scale <= 0) return (unscaled * 10n ** BigInt(-scale)).toString()
  const negative = unscaled < 0n
  const digits = (negative ? -unscaled : unscaled).toString().padStart(scale + 1, '0')
  const text = `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`
  return negative ? `-${text}` : text
}

/** A big-endian two's complement integer (Parquet decimals in BYTE_ARRAY/FIXED_LEN_BYTE_ARRAY). */
export function bigintFromBytes(bytes: Uint8Array): bigint {
  if (bytes.length === 0) return 0n
  let n = 0n
  for (const b of bytes) n = (n << 8n) | BigInt(b)
  // The sign bit of the first byte makes it negative.
  return (bytes[0]! & 0x80) !== 0 ? n - (1n << BigInt(bytes.length * 8)) : n
}

/** A little-endian two's complement integer of `words` 32-bit words (Arrow Decimal128/256). */
export function bigintFromWords(words: Uint32Array, at: number, count: number): bigint {
  let n = 0n
  for (let i = count - 1; i >= 0; i--) n = (n << 32n) | BigInt(words[at + i]!)
  return (words[at + count - 1]! & 0x80000000) !== 0 ? n - (1n << BigInt(count * 32)) : n
}

const pad2 = (n: number): string => (n < 10 ? `0${n}` : String(n))

/** Proleptic Gregorian year-month-day of a day count since 1970-01-01 (any range). */
export function civilFromDays(days: number): { year: number; month: number; day: number } {
  // Howard Hinnant's days_from_civil inverse, exact for every safe integer.
  const z = days + 719468
  const era = Math.floor(z / 146097)
  const doe = z - era * 146097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  return { year: era * 400 + yoe + (month <= 2 ? 1 : 0), month, day }
}

/** ISO 8601 year: four digits, or a sign and at least six beyond 0000..9999 (as ISO's extended form). */
function yearText(year: number): string {
  if (year >= 0 && year <= 9999) return String(year).padStart(4, '0')
  return `${year < 0 ? '-' : '+'}${String(Math.abs(year)).padStart(6, '0')}`
}

/** "2024-06-01" for a day count since the epoch. */
export function dateText(days: number): string {
  const { year, month, day } = civilFromDays(days)
  return `${yearText(year)}-${pad2(month)}-${pad2(day)}`
}

export type TimeUnit = 's' | 'ms' | 'us' | 'ns'
const PER_SECOND: Readonly<Record<TimeUnit, bigint>> = { s: 1n, ms: 1000n, us: 1000000n, ns: 1000000000n }
const FRACTION_DIGITS: Readonly<Record<TimeUnit, number>> = { s: 0, ms: 3, us: 6, ns: 9 }

/** Seconds and the fraction (in `unit`s) of a count of units, flooring towards -∞. */
function split(value: bigint, unit: TimeUnit): { seconds: bigint; fraction: bigint } {
  const per = PER_SECOND[unit]
  let seconds = value / per
  let fraction = value % per
  if (fraction < 0n) {
    seconds -= 1n
    fraction += per
  }
  return { seconds, fraction }
}

function clockText(secondsOfDay: number, fraction: bigint, unit: TimeUnit): string {
  const h = Math.floor(secondsOfDay / 3600)
  const m = Math.floor((secondsOfDay % 3600) / 60)
  const s = secondsOfDay % 60
  const digits = FRACTION_DIGITS[unit]
  return `${pad2(h)}:${pad2(m)}:${pad2(s)}${digits > 0 ? `.${fraction.toString().padStart(digits, '0')}` : ''}`
}

/**
 * "2024-06-01T12:34:56.123456Z" for `value` units since the epoch: as many fraction digits
 * as the unit has (none for seconds); "Z" only for instants (UTC-adjusted timestamps,
 * Arrow timestamps with a time zone), none for local date-times.
 */
export function timestampText(value: bigint, unit: TimeUnit, utc: boolean): string {
  const { seconds, fraction } = split(value, unit)
  const days = seconds / 86400n - (seconds % 86400n < 0n ? 1n : 0n)
  const secondsOfDay = Number(seconds - days * 86400n)
  return `${dateText(Number(days))}T${clockText(secondsOfDay, fraction, unit)}${utc ? 'Z' : ''}`
}

/** "12:34:56.123" for a time of day in `unit`s since midnight. */
export function timeText(value: bigint, unit: TimeUnit): string {
  const { seconds, fraction } = split(value, unit)
  return clockText(Number(seconds), fraction, unit)
}

/** Canonical lowercase 8-4-4-4-12 text of 16 bytes. */
export function uuidText(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`
}

/** The shortest decimal text that reads back as the same 32-bit float ("0.1", not "0.10000000149011612"). */
export function float32Text(x: number): string {
  if (!Number.isFinite(x) || Number.isInteger(x)) return String(x)
  for (let p = 1; p < 9; p++) {
    const text = String(Number(x.toPrecision(p)))
    if (Math.fround(Number(text)) === x) return text
  }
  return String(Number(x.toPrecision(9)))
}

/** A half-precision float (IEEE 754 binary16 bits) as a number. */
export function float16Value(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1
  const exponent = (bits >> 10) & 0x1f
  const fraction = bits & 0x3ff
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024)
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : NaN
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024)
}

/** JSON text of a number: non-finite values have no JSON form and become null, as in JSON.stringify. */
export function jsonNumber(text: string, x: number): string {
  return Number.isFinite(x) ? text : 'null'
}
