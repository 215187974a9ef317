import { workingMemory } from '../common/working-memory'

/**
 * The sort of a mapper's buffer: record indices ordered by (bucket, hash bytes 0-3, hash
 * bytes 4-7), three u32 keys in typed arrays, by an LSD radix sort on 16-bit digits. A
 * comparator sort calls a closure ~20 times per record; this reads each key digit twice
 * per pass and skips the passes whose digit is the same for every record (the high half
 * of the bucket, nearly always). Stable, so equal prefixes keep insertion order until the
 * caller orders them by the rest of the record (`sortTies`).
 */
const DIGITS = 1 << 16

export class RadixSorter {
  private order: Uint32Array = new Uint32Array(0)
  private tmp: Uint32Array = new Uint32Array(0)
  private readonly counts = new Uint32Array(DIGITS)

  /**
   * Indices 0..n-1 sorted by (buckets[i], his[i], los[i]); the returned array is reused by
   * the next call (copy what must outlive it).
   */
  sort(n: number, buckets: Uint32Array, his: Uint32Array, los: Uint32Array): Uint32Array {
    if (this.order.length < n) {
      this.order = new Uint32Array(workingMemory(4 * n))
      this.tmp = new Uint32Array(workingMemory(4 * n))
    }
    let order = this.order
    let tmp = this.tmp
    for (let i = 0; i < n; i++) order[i] = i
    // Least significant digit first: lo (2 digits), hi (2), bucket (2).
    const keys = [los, los, his, his, buckets, buckets]
    for (let pass = 0; pass < 6; pass++) {
      const key = keys[pass] as Uint32Array
      const shift = pass % 2 === 0 ? 0 : 16
      if (this.pass(n, key, shift, order, tmp)) {
        const t = order
        order = tmp
        tmp = t
      }
    }
    this.order = order
    this.tmp = tmp
    return order.subarray(0, n)
  }

  /** One counting pass from `from` into `to`; false (nothing moved) when all digits are equal. */
  private pass(n: number, key: Uint32Array, shift: number, from: Uint32Array, to: Uint32Array): boolean {
    const counts = this.counts
    counts.fill(0)
    // The histogram does not depend on the order: read the keys sequentially.
    for (let i = 0; i < n; i++) {
      const d = (key[i]! >>> shift) & 0xffff
      counts[d] = counts[d]! + 1
    }
    if (n === 0 || counts[(key[0]! >>> shift) & 0xffff]! === n) return false
    let sum = 0
    for (let d = 0; d < DIGITS; d++) {
      const c = counts[d]!
      counts[d] = sum
      sum += c
    }
    for (let i = 0; i < n; i++) {
      const idx = from[i]!
      const d = (key[idx]! >>> shift) & 0xffff
      const at = counts[d]!
      counts[d] = at + 1
      to[at] = idx
    }
    return true
  }
}

/**
 * Orders each run of equal (bucket, hi, lo) in `order` with `compare` (the rest of the
 * hash, the key, the input position): rare with MD5, the whole buffer with the test hash
 * that zeroes the prefix.
 */
export function sortTies(
  order: Uint32Array,
  buckets: Uint32Array,
  his: Uint32Array,
  los: Uint32Array,
  compare: (a: number, b: number) => number,
): void {
  const n = order.length
  let start = 0
  for (let i = 1; i <= n; i++) {
    if (i < n) {
      const a = order[start]!
      const b = order[i]!
      if (buckets[a] === buckets[b] && his[a] === his[b] && los[a] === los[b]) continue
    }
    if (i - start > 1) order.subarray(start, i).sort(compare)
    start = i
  }
}
