/**
 * MD5 in plain JavaScript, the twin of the addon's `md5` (same signature). Specialised for
 * what rostore hashes per lookup: short keys. A key of up to 55 bytes is one 64-byte
 * block, built in a reused word array with no allocation; longer input takes the same
 * rounds block by block. Measured against hash-wasm and the addon in bench/ (see
 * docs/FORMAT.md "Lookup").
 */
const block = new Int32Array(16)
const tail = new Uint8Array(128)
const state = new Int32Array(4)

export function md5(src: Uint8Array, out: Uint8Array): void {
  if (out.length < 16) throw new RangeError('md5: out must hold 16 bytes')
  md5Range(src, 0, src.length, out, 0)
}

/** MD5 of src[from, to) into out[outAt, outAt + 16): no view per key in batches. */
function md5Range(src: Uint8Array, from: number, to: number, out: Uint8Array, outAt: number): void {
  state[0] = 0x67452301
  state[1] = 0xefcdab89 | 0
  state[2] = 0x98badcfe | 0
  state[3] = 0x10325476
  const len = to - from
  const full = len - (len % 64)
  for (let at = 0; at < full; at += 64) {
    for (let i = 0; i < 16; i++) {
      const p = from + at + 4 * i
      block[i] = src[p]! | (src[p + 1]! << 8) | (src[p + 2]! << 16) | (src[p + 3]! << 24)
    }
    rounds(block)
  }
  const rest = len - full
  tail.fill(0)
  for (let i = 0; i < rest; i++) tail[i] = src[from + full + i]!
  tail[rest] = 0x80
  const blocks = rest < 56 ? 1 : 2
  const bits = len * 8
  const end = blocks * 64
  tail[end - 8] = bits & 0xff
  tail[end - 7] = (bits >>> 8) & 0xff
  tail[end - 6] = (bits >>> 16) & 0xff
  tail[end - 5] = (bits >>> 24) & 0xff
  const high = Math.floor(bits / 0x100000000)
  tail[end - 4] = high & 0xff
  tail[end - 3] = (high >>> 8) & 0xff
  tail[end - 2] = (high >>> 16) & 0xff
  tail[end - 1] = (high >>> 24) & 0xff
  for (let b = 0; b < blocks; b++) {
    for (let i = 0; i < 16; i++) {
      const p = b * 64 + 4 * i
      block[i] = tail[p]! | (tail[p + 1]! << 8) | (tail[p + 2]! << 16) | (tail[p + 3]! << 24)
    }
    rounds(block)
  }
  for (let i = 0; i < 4; i++) {
    const v = state[i]!
    out[outAt + 4 * i] = v & 0xff
    out[outAt + 4 * i + 1] = (v >>> 8) & 0xff
    out[outAt + 4 * i + 2] = (v >>> 16) & 0xff
    out[outAt + 4 * i + 3] = (v >>> 24) & 0xff
  }
}

/** The 64 steps of RFC 1321, unrolled (generated; see native/hash/md5.c for the same rounds). */
function rounds(x: Int32Array): void {
  let a = state[0]!
  let b = state[1]!
  let c = state[2]!
  let d = state[3]!
  a = (a + (d ^ (b & (c ^ d))) + x[0]! + 0xd76aa478) | 0
  a = (((a << 7) | (a >>> 25)) + b) | 0
  d = (d + (c ^ (a & (b ^ c))) + x[1]! + 0xe8c7b756) | 0
  d = (((d << 12) | (d >>> 20)) + a) | 0
  c = (c + (b ^ (d & (a ^ b))) + x[2]! + 0x242070db) | 0
  c = (((c << 17) | (c >>> 15)) + d) | 0
  b = (b + (a ^ (c & (d ^ a))) + x[3]! + 0xc1bdceee) | 0
  b = (((b << 22) | (b >>> 10)) + c) | 0
  a = (a + (d ^ (b & (c ^ d))) + x[4]! + 0xf57c0faf) | 0
  a = (((a << 7) | (a >>> 25)) + b) | 0
  d = (d + (c ^ (a & (b ^ c))) + x[5]! + 0x4787c62a) | 0
  d = (((d << 12) | (d >>> 20)) + a) | 0
  c = (c + (b ^ (d & (a ^ b))) + x[6]! + 0xa8304613) | 0
  c = (((c << 17) | (c >>> 15)) + d) | 0
  b = (b + (a ^ (c & (d ^ a))) + x[7]! + 0xfd469501) | 0
  b = (((b << 22) | (b >>> 10)) + c) | 0
  a = (a + (d ^ (b & (c ^ d))) + x[8]! + 0x698098d8) | 0
  a = (((a << 7) | (a >>> 25)) + b) | 0
  d = (d + (c ^ (a & (b ^ c))) + x[9]! + 0x8b44f7af) | 0
  d = (((d << 12) | (d >>> 20)) + a) | 0
  c = (c + (b ^ (d & (a ^ b))) + x[10]! + 0xffff5bb1) | 0
  c = (((c << 17) | (c >>> 15)) + d) | 0
  b = (b + (a ^ (c & (d ^ a))) + x[11]! + 0x895cd7be) | 0
  b = (((b << 22) | (b >>> 10)) + c) | 0
  a = (a + (d ^ (b & (c ^ d))) + x[12]! + 0x6b901122) | 0
  a = (((a << 7) | (a >>> 25)) + b) | 0
  d = (d + (c ^ (a & (b ^ c))) + x[13]! + 0xfd987193) | 0
  d = (((d << 12) | (d >>> 20)) + a) | 0
  c = (c + (b ^ (d & (a ^ b))) + x[14]! + 0xa679438e) | 0
  c = (((c << 17) | (c >>> 15)) + d) | 0
  b = (b + (a ^ (c & (d ^ a))) + x[15]! + 0x49b40821) | 0
  b = (((b << 22) | (b >>> 10)) + c) | 0
  a = (a + (c ^ (d & (b ^ c))) + x[1]! + 0xf61e2562) | 0
  a = (((a << 5) | (a >>> 27)) + b) | 0
  d = (d + (b ^ (c & (a ^ b))) + x[6]! + 0xc040b340) | 0
  d = (((d << 9) | (d >>> 23)) + a) | 0
  c = (c + (a ^ (b & (d ^ a))) + x[11]! + 0x265e5a51) | 0
  c = (((c << 14) | (c >>> 18)) + d) | 0
  b = (b + (d ^ (a & (c ^ d))) + x[0]! + 0xe9b6c7aa) | 0
  b = (((b << 20) | (b >>> 12)) + c) | 0
  a = (a + (c ^ (d & (b ^ c))) + x[5]! + 0xd62f105d) | 0
  a = (((a << 5) | (a >>> 27)) + b) | 0
  d = (d + (b ^ (c & (a ^ b))) + x[10]! + 0x02441453) | 0
  d = (((d << 9) | (d >>> 23)) + a) | 0
  c = (c + (a ^ (b & (d ^ a))) + x[15]! + 0xd8a1e681) | 0
  c = (((c << 14) | (c >>> 18)) + d) | 0
  b = (b + (d ^ (a & (c ^ d))) + x[4]! + 0xe7d3fbc8) | 0
  b = (((b << 20) | (b >>> 12)) + c) | 0
  a = (a + (c ^ (d & (b ^ c))) + x[9]! + 0x21e1cde6) | 0
  a = (((a << 5) | (a >>> 27)) + b) | 0
  d = (d + (b ^ (c & (a ^ b))) + x[14]! + 0xc33707d6) | 0
  d = (((d << 9) | (d >>> 23)) + a) | 0
  c = (c + (a ^ (b & (d ^ a))) + x[3]! + 0xf4d50d87) | 0
  c = (((c << 14) | (c >>> 18)) + d) | 0
  b = (b + (d ^ (a & (c ^ d))) + x[8]! + 0x455a14ed) | 0
  b = (((b << 20) | (b >>> 12)) + c) | 0
  a = (a + (c ^ (d & (b ^ c))) + x[13]! + 0xa9e3e905) | 0
  a = (((a << 5) | (a >>> 27)) + b) | 0
  d = (d + (b ^ (c & (a ^ b))) + x[2]! + 0xfcefa3f8) | 0
  d = (((d << 9) | (d >>> 23)) + a) | 0
  c = (c + (a ^ (b & (d ^ a))) + x[7]! + 0x676f02d9) | 0
  c = (((c << 14) | (c >>> 18)) + d) | 0
  b = (b + (d ^ (a & (c ^ d))) + x[12]! + 0x8d2a4c8a) | 0
  b = (((b << 20) | (b >>> 12)) + c) | 0
  a = (a + (b ^ c ^ d) + x[5]! + 0xfffa3942) | 0
  a = (((a << 4) | (a >>> 28)) + b) | 0
  d = (d + (a ^ b ^ c) + x[8]! + 0x8771f681) | 0
  d = (((d << 11) | (d >>> 21)) + a) | 0
  c = (c + (d ^ a ^ b) + x[11]! + 0x6d9d6122) | 0
  c = (((c << 16) | (c >>> 16)) + d) | 0
  b = (b + (c ^ d ^ a) + x[14]! + 0xfde5380c) | 0
  b = (((b << 23) | (b >>> 9)) + c) | 0
  a = (a + (b ^ c ^ d) + x[1]! + 0xa4beea44) | 0
  a = (((a << 4) | (a >>> 28)) + b) | 0
  d = (d + (a ^ b ^ c) + x[4]! + 0x4bdecfa9) | 0
  d = (((d << 11) | (d >>> 21)) + a) | 0
  c = (c + (d ^ a ^ b) + x[7]! + 0xf6bb4b60) | 0
  c = (((c << 16) | (c >>> 16)) + d) | 0
  b = (b + (c ^ d ^ a) + x[10]! + 0xbebfbc70) | 0
  b = (((b << 23) | (b >>> 9)) + c) | 0
  a = (a + (b ^ c ^ d) + x[13]! + 0x289b7ec6) | 0
  a = (((a << 4) | (a >>> 28)) + b) | 0
  d = (d + (a ^ b ^ c) + x[0]! + 0xeaa127fa) | 0
  d = (((d << 11) | (d >>> 21)) + a) | 0
  c = (c + (d ^ a ^ b) + x[3]! + 0xd4ef3085) | 0
  c = (((c << 16) | (c >>> 16)) + d) | 0
  b = (b + (c ^ d ^ a) + x[6]! + 0x04881d05) | 0
  b = (((b << 23) | (b >>> 9)) + c) | 0
  a = (a + (b ^ c ^ d) + x[9]! + 0xd9d4d039) | 0
  a = (((a << 4) | (a >>> 28)) + b) | 0
  d = (d + (a ^ b ^ c) + x[12]! + 0xe6db99e5) | 0
  d = (((d << 11) | (d >>> 21)) + a) | 0
  c = (c + (d ^ a ^ b) + x[15]! + 0x1fa27cf8) | 0
  c = (((c << 16) | (c >>> 16)) + d) | 0
  b = (b + (c ^ d ^ a) + x[2]! + 0xc4ac5665) | 0
  b = (((b << 23) | (b >>> 9)) + c) | 0
  a = (a + (c ^ (b | ~d)) + x[0]! + 0xf4292244) | 0
  a = (((a << 6) | (a >>> 26)) + b) | 0
  d = (d + (b ^ (a | ~c)) + x[7]! + 0x432aff97) | 0
  d = (((d << 10) | (d >>> 22)) + a) | 0
  c = (c + (a ^ (d | ~b)) + x[14]! + 0xab9423a7) | 0
  c = (((c << 15) | (c >>> 17)) + d) | 0
  b = (b + (d ^ (c | ~a)) + x[5]! + 0xfc93a039) | 0
  b = (((b << 21) | (b >>> 11)) + c) | 0
  a = (a + (c ^ (b | ~d)) + x[12]! + 0x655b59c3) | 0
  a = (((a << 6) | (a >>> 26)) + b) | 0
  d = (d + (b ^ (a | ~c)) + x[3]! + 0x8f0ccc92) | 0
  d = (((d << 10) | (d >>> 22)) + a) | 0
  c = (c + (a ^ (d | ~b)) + x[10]! + 0xffeff47d) | 0
  c = (((c << 15) | (c >>> 17)) + d) | 0
  b = (b + (d ^ (c | ~a)) + x[1]! + 0x85845dd1) | 0
  b = (((b << 21) | (b >>> 11)) + c) | 0
  a = (a + (c ^ (b | ~d)) + x[8]! + 0x6fa87e4f) | 0
  a = (((a << 6) | (a >>> 26)) + b) | 0
  d = (d + (b ^ (a | ~c)) + x[15]! + 0xfe2ce6e0) | 0
  d = (((d << 10) | (d >>> 22)) + a) | 0
  c = (c + (a ^ (d | ~b)) + x[6]! + 0xa3014314) | 0
  c = (((c << 15) | (c >>> 17)) + d) | 0
  b = (b + (d ^ (c | ~a)) + x[13]! + 0x4e0811a1) | 0
  b = (((b << 21) | (b >>> 11)) + c) | 0
  a = (a + (c ^ (b | ~d)) + x[4]! + 0xf7537e82) | 0
  a = (((a << 6) | (a >>> 26)) + b) | 0
  d = (d + (b ^ (a | ~c)) + x[11]! + 0xbd3af235) | 0
  d = (((d << 10) | (d >>> 22)) + a) | 0
  c = (c + (a ^ (d | ~b)) + x[2]! + 0x2ad7d2bb) | 0
  c = (((c << 15) | (c >>> 17)) + d) | 0
  b = (b + (d ^ (c | ~a)) + x[9]! + 0xeb86d391) | 0
  b = (((b << 21) | (b >>> 11)) + c) | 0
  state[0] = (state[0]! + a) | 0
  state[1] = (state[1]! + b) | 0
  state[2] = (state[2]! + c) | 0
  state[3] = (state[3]! + d) | 0
}

/** The twin of the addon's `md5Batch`: MD5 of each range [starts[i], ends[i]) of `src` into out[16i, 16i + 16). */
export function md5Batch(src: Uint8Array, starts: Uint32Array, ends: Uint32Array, count: number, out: Uint8Array): void {
  checkBatch(src, starts, ends, count)
  if (out.length < 16 * count) throw new RangeError('md5Batch: out must hold 16 bytes per range')
  for (let i = 0; i < count; i++) md5Range(src, starts[i]!, ends[i]!, out, 16 * i)
}

/** Bounds of a batch call, checked as the addon checks them. */
export function checkBatch(src: Uint8Array, starts: Uint32Array, ends: Uint32Array, count: number): void {
  if (count > starts.length || count > ends.length) throw new RangeError('count exceeds the starts or ends arrays')
  for (let i = 0; i < count; i++) if (starts[i]! > ends[i]! || ends[i]! > src.length) throw new RangeError('a range lies outside src')
}
