import type { ValueFraming } from './store-reader-api'

/**
 * Writes the answers of a batch, framed (see ValueFraming), into one Buffer sized in a
 * first pass: either from lookup results (status, chunk, offset, length per key, as
 * LookupFunctions.getMany writes them) and the chunks' data windows, copying each value
 * straight from the mapping; or from values already in Buffers. Undefined, with nothing
 * allocated, when the framed answers would exceed `maxBytes`.
 */
export function writeFramed(
  framing: ValueFraming,
  count: number,
  results: Float64Array,
  dataOf: (chunk: number) => readonly ArrayBufferLike[],
  maxBytes?: number,
): Buffer | undefined
export function writeFramed(
  framing: ValueFraming,
  count: number,
  values: readonly (Uint8Array | undefined)[],
  dataOf?: undefined,
  maxBytes?: number,
): Buffer | undefined
export function writeFramed(
  framing: ValueFraming,
  count: number,
  source: Float64Array | readonly (Uint8Array | undefined)[],
  dataOf?: (chunk: number) => readonly ArrayBufferLike[],
  maxBytes = Infinity,
): Buffer | undefined {
  const fromResults = source instanceof Float64Array
  const lengthOf = (i: number): number => {
    if (fromResults) return (source[4 * i] as number) === 1 ? (source[4 * i + 3] as number) : -1
    const v = (source as readonly (Uint8Array | undefined)[])[i]
    return v === undefined ? -1 : v.length
  }
  const resp = framing.length === 'resp'
  let size = framing.prefix.length
  for (let i = 0; i < count; i++) {
    const len = lengthOf(i)
    if (len < 0) size += framing.absent.length
    else {
      if (!resp && len >= 0xffffffff) throw new RangeError('value too large for a u32 length header')
      size += (resp ? 3 + decimalDigits(len) : 4) + len + framing.suffix.length
    }
  }
  if (size > maxBytes) return undefined
  const out = Buffer.allocUnsafe(size)
  out.set(framing.prefix, 0)
  let at = framing.prefix.length
  for (let i = 0; i < count; i++) {
    const len = lengthOf(i)
    if (len < 0) {
      out.set(framing.absent, at)
      at += framing.absent.length
      continue
    }
    if (resp) {
      out[at++] = 0x24 // $
      at += out.write(String(len), at, 'latin1')
      out[at++] = 0x0d
      out[at++] = 0x0a
    } else {
      out.writeUInt32BE(len, at)
      at += 4
    }
    if (fromResults) at += copyValue(dataOf?.(source[4 * i + 1] as number) ?? [], source[4 * i + 2] as number, len, out, at)
    else {
      out.set((source as readonly (Uint8Array | undefined)[])[i] as Uint8Array, at)
      at += len
    }
    out.set(framing.suffix, at)
    at += framing.suffix.length
  }
  return out
}

function copyValue(windows: readonly ArrayBufferLike[], offset: number, len: number, out: Buffer, at: number): number {
  const w = windows[0]?.byteLength ?? 0
  for (let done = 0; done < len;) {
    const pos = offset + done
    const k = Math.floor(pos / w)
    const from = pos - k * w
    const n = Math.min(len - done, w - from)
    out.set(new Uint8Array(windows[k] as ArrayBuffer, from, n), at + done)
    done += n
  }
  return len
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
