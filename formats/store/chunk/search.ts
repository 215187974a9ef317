/**
 * Index searches: pure functions over the sorted 8-byte hash prefixes of one chunk,
 * held as two u32 arrays (high and low halves, big-endian order of the MD5 bytes).
 *
 * Both return a position `p` such that: if some entry equals the target, entry `p`
 * does (any one of equal entries); otherwise `p` is where the target would be inserted.
 * Equal prefixes are hash collisions; the caller looks at neighbours only when the key
 * stored at `p` is not the one it wants, so a hit costs no extra comparison.
 */
export interface IndexKeys {
  readonly hi: Uint32Array
  readonly lo: Uint32Array
  /** Optional first-step table for interpolation search (see buildRadixTable). */
  readonly radix?: RadixTable
}

/**
 * `starts[b]` is the first entry whose top `bits` bits are >= b, for b = 0..2^bits.
 * It turns the first, least precise interpolation step (error ~sqrt(n)/2 entries) into
 * an exact window of ~8 entries, at about half a byte per entry.
 */
export interface RadixTable {
  readonly bits: number
  readonly starts: Uint32Array
}

/** An empty table sized for `n` entries (filled by the caller in one pass), or none below 64. */
export function radixTableFor(n: number): RadixTable | undefined {
  if (n < 64) return undefined
  const bits = Math.min(24, Math.max(1, Math.floor(Math.log2(n)) - 3))
  return { bits, starts: new Uint32Array(2 ** bits + 1) }
}

export function buildRadixTable(hi: Uint32Array): RadixTable | undefined {
  const n = hi.length
  const table = radixTableFor(n)
  if (!table) return undefined
  const { bits, starts } = table
  const buckets = 2 ** bits
  const shift = 32 - bits
  let j = 0
  for (let b = 0; b < buckets; b++) {
    while (j < n && (hi[j] as number) >>> shift < b) j++
    starts[b] = j
  }
  starts[buckets] = n
  return { bits, starts }
}

/** Counts index entries compared, for benchmarks and tests. */
export interface ProbeCounter {
  probes: number
}

export type SearchFn = (keys: IndexKeys, targetHi: number, targetLo: number, counter: ProbeCounter) => number

export const SEARCH_STRATEGIES = ['interpolation', 'binary'] as const
export type SearchStrategy = (typeof SEARCH_STRATEGIES)[number]

const TWO32 = 0x100000000
const KEY_SPACE_END = TWO32 * TWO32

function compare(keys: IndexKeys, i: number, hi: number, lo: number): number {
  const h = keys.hi[i] as number
  if (h !== hi) return h < hi ? -1 : 1
  const l = keys.lo[i] as number
  return l === lo ? 0 : l < lo ? -1 : 1
}

export const binarySearch: SearchFn = (keys, targetHi, targetLo, counter) => {
  let left = 0
  let right = keys.hi.length
  while (left < right) {
    const mid = (left + right) >>> 1
    counter.probes++
    const c = compare(keys, mid, targetHi, targetLo)
    if (c === 0) return mid
    if (c < 0) left = mid + 1
    else right = mid
  }
  return left
}

/**
 * MD5 prefixes are uniform, so a key's expected position is proportional to its value.
 * Invariant: entries before `left` are < target, entries from `right` on are > target;
 * `lowVal`/`highVal` bound the values inside that window. A radix table, when the
 * index has one, gives the first window exactly. Each probe re-interpolates
 * inside the shrunk window, which on uniform keys converges in about log2(log2(n))
 * probes. Degenerate inputs (equal or clustered prefixes) would make interpolation
 * linear, so after a budget of interpolation probes the search bisects: never worse
 * than a few probes more than binary search.
 */
export const interpolationSearch: SearchFn = (keys, targetHi, targetLo, counter) => {
  let left = 0
  let right = keys.hi.length
  let lowVal = 0
  let highVal = KEY_SPACE_END
  const radix = keys.radix
  if (radix) {
    const b = targetHi >>> (32 - radix.bits)
    left = radix.starts[b] as number
    right = radix.starts[b + 1] as number
    const width = 2 ** (64 - radix.bits)
    lowVal = b * width
    highVal = lowVal + width
  }
  const target = targetHi * TWO32 + targetLo
  let budget = interpolationBudget(right)
  while (left < right) {
    let pos: number
    if (budget > 0 && highVal > lowVal) {
      budget--
      pos = left + Math.floor(((target - lowVal) / (highVal - lowVal)) * (right - left))
      if (pos < left) pos = left
      else if (pos >= right) pos = right - 1
    } else {
      pos = (left + right) >>> 1
    }
    counter.probes++
    const c = compare(keys, pos, targetHi, targetLo)
    if (c === 0) return pos
    if (c < 0) {
      left = pos + 1
      lowVal = (keys.hi[pos] as number) * TWO32 + (keys.lo[pos] as number)
    } else {
      right = pos
      highVal = (keys.hi[pos] as number) * TWO32 + (keys.lo[pos] as number)
    }
  }
  return left
}

/** Interpolation probes before falling back to bisection: generous for uniform keys. */
function interpolationBudget(n: number): number {
  return n < 2 ? 1 : Math.ceil(2 * Math.log2(Math.log2(n) + 1)) + 2
}

export function searchFn(strategy: SearchStrategy): SearchFn {
  switch (strategy) {
    case 'interpolation':
      return interpolationSearch
    case 'binary':
      return binarySearch
  }
}
