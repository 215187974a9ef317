/**
 * CRC-32 (zlib's polynomial) in plain JavaScript, slicing by 8: the twin of the addon's
 * `crc32` (same signature, same results as zlib's crc32(initial, src), including for an
 * empty `src`, which leaves `initial` unchanged). Short records are where this matters:
 * a call into zlib costs more than the arithmetic (measured in bench/, docs/FORMAT.md).
 */
const TABLES = makeTables()
const [T0, T1, T2, T3, T4, T5, T6, T7] = TABLES as [
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
]

function makeTables(): Int32Array[] {
  const t = Array.from({ length: 8 }, () => new Int32Array(256))
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    t[0]![n] = c
  }
  for (let n = 0; n < 256; n++) {
    for (let k = 1; k < 8; k++) {
      const prev = t[k - 1]![n]!
      t[k]![n] = t[0]![prev & 0xff]! ^ (prev >>> 8)
    }
  }
  return t
}

export function crc32(src: Uint8Array, initial = 0): number {
  return crc32Range(src, 0, src.length, initial)
}

/** CRC-32 of src[from, to): no view per record in batches. */
function crc32Range(src: Uint8Array, from: number, to: number, initial: number): number {
  let c = ~initial
  let i = from
  const len = to
  const end8 = len - ((len - from) % 8)
  while (i < end8) {
    const lo = (src[i]! | (src[i + 1]! << 8) | (src[i + 2]! << 16) | (src[i + 3]! << 24)) ^ c
    const hi = src[i + 4]! | (src[i + 5]! << 8) | (src[i + 6]! << 16) | (src[i + 7]! << 24)
    c =
      T7[lo & 0xff]! ^
      T6[(lo >>> 8) & 0xff]! ^
      T5[(lo >>> 16) & 0xff]! ^
      T4[lo >>> 24]! ^
      T3[hi & 0xff]! ^
      T2[(hi >>> 8) & 0xff]! ^
      T1[(hi >>> 16) & 0xff]! ^
      T0[hi >>> 24]!
    i += 8
  }
  while (i < len) c = T0[(c ^ src[i++]!) & 0xff]! ^ (c >>> 8)
  return ~c >>> 0
}

/** The twin of the addon's `crc32Batch`: zlib's CRC-32 of each range [starts[i], ends[i]) of `src` into out[i]. */
export function crc32Batch(src: Uint8Array, starts: Uint32Array, ends: Uint32Array, count: number, out: Uint32Array): void {
  if (count > starts.length || count > ends.length) throw new RangeError('count exceeds the starts or ends arrays')
  if (out.length < count) throw new RangeError('crc32Batch: out must hold one number per range')
  for (let i = 0; i < count; i++) {
    const s = starts[i]!
    const e = ends[i]!
    if (s > e || e > src.length) throw new RangeError('a range lies outside src')
    out[i] = crc32Range(src, s, e, 0)
  }
}
