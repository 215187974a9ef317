/**
 * A growable output buffer that framed answers are written into in place (a RESP reply
 * writer is one): after `reserve(n)`, `buf` has room for `n` more bytes from `pos`.
 */
export interface FrameSink {
  readonly buf: Buffer
  pos: number
  reserve(n: number): void
}

/**
 * How getManyFramed writes each answer: `prefix` bytes, then per key either the absent
 * marker or a length header, the value and `suffix`. The two framings rostore speaks:
 * - HTTP multi-get (formats/wire/multiget.ts): `{ prefix: empty, length: 'u32be',
 *   absent: FF FF FF FF, suffix: empty }`;
 * - RESP MGET: `{ prefix: '*N\r\n', length: 'resp', absent: '$-1\r\n', suffix: '\r\n' }`,
 *   where the 'resp' length header is `$<decimal length>\r\n`.
 */
export interface ValueFraming {
  readonly prefix: Uint8Array
  readonly length: 'u32be' | 'resp'
  readonly absent: Uint8Array
  readonly suffix: Uint8Array
}

/** A batch's answers: lookup results (see LookupFunctions.getMany) or values already in Buffers. */
type FramedSource = Float64Array | readonly (Uint8Array | undefined)[]

/** Frames lookup results with the values still in the mapped files: LookupFunctions.frame. */
export type ResultFramer = (
  results: Float64Array,
  count: number,
  out: Uint8Array,
  at: number,
  resp: boolean,
  absent: Uint8Array,
  suffix: Uint8Array,
) => number

/**
 * Writes the answers of a batch, framed (see ValueFraming), into one Buffer sized in a
 * first pass: either from lookup results (status, chunk, offset, length per key, as
 * LookupFunctions.getMany writes them), which the addon frames copying each value
 * straight from the mapping (no object per value); or from values already in Buffers.
 * Undefined, with nothing allocated, when the framed answers would exceed `maxBytes`.
 */
export function writeFramed(
  framing: ValueFraming,
  count: number,
  results: Float64Array,
  framer: ResultFramer,
  maxBytes?: number,
): Buffer | undefined
export function writeFramed(
  framing: ValueFraming,
  count: number,
  values: readonly (Uint8Array | undefined)[],
  framer?: undefined,
  maxBytes?: number,
): Buffer | undefined
export function writeFramed(
  framing: ValueFraming,
  count: number,
  source: FramedSource,
  framer?: ResultFramer,
  maxBytes = Infinity,
): Buffer | undefined {
  const size = framedSize(framing, count, source)
  if (size > maxBytes) return undefined
  const out = Buffer.allocUnsafe(size)
  writeFramedAt(framing, count, source, framer, out, 0)
  return out
}

/**
 * writeFramed into `sink` at its position instead of a new Buffer: a batch's answers cost
 * no allocation of their own (a fresh Buffer of a multi-get's size is fresh memory, and a
 * page touched for the first time is a page fault, costly on a VM) and no second copy into the connection's output. Returns the bytes written, or -1 (nothing written)
 * past `maxBytes`.
 */
export function writeFramedInto(
  sink: FrameSink,
  framing: ValueFraming,
  count: number,
  source: FramedSource,
  framer: ResultFramer | undefined,
  maxBytes = Infinity,
): number {
  const size = framedSize(framing, count, source)
  if (size > maxBytes) return -1
  sink.reserve(size)
  writeFramedAt(framing, count, source, framer, sink.buf, sink.pos)
  sink.pos += size
  return size
}

/** Length of a framed value, -1 for an absent one. */
function lengthOf(source: FramedSource, i: number): number {
  if (source instanceof Float64Array) return (source[4 * i] as number) === 1 ? (source[4 * i + 3] as number) : -1
  const v = source[i]
  return v === undefined ? -1 : v.length
}

function framedSize(framing: ValueFraming, count: number, source: FramedSource): number {
  const resp = framing.length === 'resp'
  let size = framing.prefix.length
  for (let i = 0; i < count; i++) {
    const len = lengthOf(source, i)
    if (len < 0) size += framing.absent.length
    else {
      if (!resp && len >= 0xffffffff) throw new RangeError('value too large for a u32 length header')
      size += (resp ? 3 + decimalDigits(len) : 4) + len + framing.suffix.length
    }
  }
  return size
}

function writeFramedAt(
  framing: ValueFraming,
  count: number,
  source: FramedSource,
  framer: ResultFramer | undefined,
  out: Buffer,
  at: number,
): void {
  const resp = framing.length === 'resp'
  out.set(framing.prefix, at)
  at += framing.prefix.length
  if (source instanceof Float64Array) {
    if (!framer) throw new TypeError('lookup results need the framer of their lookup')
    framer(source, count, out, at, resp, framing.absent, framing.suffix)
    return
  }
  for (let i = 0; i < count; i++) at = writeFrame(out, at, source[i], resp, framing.absent, framing.suffix)
}

/**
 * writeFramedInto for one answer (a GET reply from a value already in a Buffer, or none);
 * whether there was a value.
 */
export function writeValueInto(sink: FrameSink, framing: ValueFraming, value: Uint8Array | undefined): boolean {
  writeFramedInto(sink, framing, 1, [value], undefined)
  return value !== undefined
}

/**
 * One framed answer at out[pos]: `absent`, or the length header (`resp`: `$<decimal>\r\n`,
 * else u32 big-endian), the value and `suffix`. The offset after it, or -1, writing
 * nothing, when `out` has no room for it. The addon's frame_one (native/lookup/lookup-napi.c) is
 * its twin.
 */
export function writeFrame(
  out: Uint8Array,
  pos: number,
  value: Uint8Array | undefined,
  resp: boolean,
  absent: Uint8Array,
  suffix: Uint8Array,
): number {
  if (value === undefined) {
    if (out.length - pos < absent.length) return -1
    out.set(absent, pos)
    return pos + absent.length
  }
  const len = value.length
  if (out.length - pos < (resp ? 3 + decimalDigits(len) : 4) + len + suffix.length) return -1
  if (resp) {
    out[pos++] = 0x24 // $
    pos += writeDecimal(out, pos, len)
    out[pos++] = 0x0d
    out[pos++] = 0x0a
  } else {
    out[pos++] = len >>> 24
    out[pos++] = (len >>> 16) & 0xff
    out[pos++] = (len >>> 8) & 0xff
    out[pos++] = len & 0xff
  }
  out.set(value, pos)
  pos += len
  out.set(suffix, pos)
  return pos + suffix.length
}

/** Writes `n` (a non-negative integer) in decimal at `at`; returns the digits written. */
function writeDecimal(out: Uint8Array, at: number, n: number): number {
  const digits = decimalDigits(n)
  for (let p = at + digits - 1; p >= at; p--) {
    out[p] = 0x30 + (n % 10)
    n = Math.floor(n / 10)
  }
  return digits
}

function decimalDigits(n: number): number {
  let d = 1
  while (n >= 10) {
    n = Math.floor(n / 10)
    d++
  }
  return d
}

/** The HTTP multi-get framing of formats/wire/multiget.ts: u32be length or FFFFFFFF. */
export const MULTIGET_FRAMING: ValueFraming = {
  prefix: new Uint8Array(0),
  length: 'u32be',
  absent: new Uint8Array([0xff, 0xff, 0xff, 0xff]),
  suffix: new Uint8Array(0),
}

const RESP_ABSENT = new TextEncoder().encode('$-1\r\n')
const CRLF = new TextEncoder().encode('\r\n')

/** A RESP MGET reply of `count` keys: `*N\r\n`, then `$len\r\n<value>\r\n` or `$-1\r\n` per key. */
export function respMgetFraming(count: number): ValueFraming {
  return { prefix: new TextEncoder().encode(`*${count}\r\n`), length: 'resp', absent: RESP_ABSENT, suffix: CRLF }
}
