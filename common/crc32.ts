/**
 * CRC-32 (zlib's polynomial) in plain JavaScript, slicing by 8: the twin of the addon's
 * `crc32` (same signature, same results as zlib's crc32(initial, src), including for an
 * empty `src`, which leaves `initial` unchanged). Short records are where this matters:
 * a call into zlib costs more than the arithmetic (measured in bench/, docs/FORMAT.md).
 */
const TABLES = makeTables()

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
  const [t0, t1, t2, t3, t4, t5, t6, t7] = TABLES as [
    Int32Array,
    Int32Array,
    Int32Array,
    Int32Array,
    Int32Array,
    Int32Array,
    Int32Array,
    Int32Array,
  ]
  let c = ~initial
  let i = 0
  const len = src.length
  const end8 = len - (len % 8)
  while (i < end8) {
    const lo = (src[i]! | (src[i + 1]! << 8) | (src[i + 2]! << 16) | (src[i + 3]! << 24)) ^ c
    const hi = src[i + 4]! | (src[i + 5]! << 8) | (src[i + 6]! << 16) | (src[i + 7]! << 24)
    c =
      t7[lo & 0xff]! ^
      t6[(lo >>> 8) & 0xff]! ^
      t5[(lo >>> 16) & 0xff]! ^
      t4[lo >>> 24]! ^
      t3[hi & 0xff]! ^
      t2[(hi >>> 8) & 0xff]! ^
      t1[(hi >>> 16) & 0xff]! ^
      t0[hi >>> 24]!
    i += 8
  }
  while (i < len) c = t0[(c ^ src[i++]!) & 0xff]! ^ (c >>> 8)
  return ~c >>> 0
}
