import fc from 'fast-check'
import { createHash } from 'node:crypto'
import { SEARCH_STRATEGIES, buildRadixTable, searchFn, type IndexKeys } from '../../../../formats/store/chunk/search'

function keysOfAll(values: bigint[], radix = false): IndexKeys {
  const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  const hi = Uint32Array.from(sorted.map((v) => Number(v >> 32n)))
  return { hi, lo: Uint32Array.from(sorted.map((v) => Number(v & 0xffffffffn))), radix: radix ? buildRadixTable(hi) : undefined }
}

/** Reference lower bound by linear scan. */
function lowerBound(k: IndexKeys, hi: number, lo: number): number {
  for (let i = 0; i < k.hi.length; i++) {
    if (k.hi[i]! > hi || (k.hi[i] === hi && k.lo[i]! >= lo)) return i
  }
  return k.hi.length
}

const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n })

describe.each(
  SEARCH_STRATEGIES.flatMap(
    (s) =>
      [
        [s, false],
        [s, true],
      ] as const,
  ),
)('%s search (radix table: %s)', (strategy, radix) => {
  const search = searchFn(strategy)
  const find = (k: IndexKeys, v: bigint) => search(k, Number(v >> 32n), Number(v & 0xffffffffn), { probes: 0 })
  const keysOf = (values: bigint[]) => keysOfAll(values, radix)

  test('empty chunk returns 0', () => {
    expect(find(keysOf([]), 5n)).toBe(0)
  })

  test('one entry: before, at, after', () => {
    const k = keysOf([1000n])
    expect(find(k, 1n)).toBe(0)
    expect(find(k, 1000n)).toBe(0)
    expect(find(k, 1001n)).toBe(1)
  })

  test('all entries equal (duplicated prefixes) returns one of them', () => {
    const k = keysOf(Array.from({ length: 50 }, () => 77n))
    expect(find(k, 77n)).toBeGreaterThanOrEqual(0)
    expect(find(k, 77n)).toBeLessThan(50)
    expect(find(k, 78n)).toBe(50)
    expect(find(k, 76n)).toBe(0)
  })

  test('extremes of the key space', () => {
    const max = (1n << 64n) - 1n
    const k = keysOf([0n, 1n, max - 1n, max])
    expect(find(k, 0n)).toBe(0)
    expect(find(k, max)).toBe(3)
    expect(find(k, max - 1n)).toBe(2)
  })

  test('clustered keys that differ only in low bits', () => {
    const base = 0xabcdef0000000000n
    const k = keysOf(Array.from({ length: 200 }, (_, i) => base + BigInt(i * 3)))
    for (let i = 0; i < 200; i++) expect(find(k, base + BigInt(i * 3))).toBe(i)
    expect(find(k, base + 1n)).toBe(1)
    expect(find(k, base + 599n)).toBe(200)
  })

  test('matches the reference lower bound on random and duplicated keys', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(u64, fc.constantFrom(5n, 1n << 63n, 9n)), { maxLength: 300 }), u64, (values, probe) => {
        const k = keysOf(values)
        const targets = [probe, ...values]
        for (const t of targets) {
          const hi = Number(t >> 32n)
          const lo = Number(t & 0xffffffffn)
          const p = search(k, hi, lo, { probes: 0 })
          const lb = lowerBound(k, hi, lo)
          const present = lb < k.hi.length && k.hi[lb] === hi && k.lo[lb] === lo
          if (present) expect([k.hi[p], k.lo[p]]).toEqual([hi, lo])
          else expect(p).toBe(lb)
        }
      }),
      { numRuns: 300 },
    )
  })

  test('probe count stays logarithmic on adversarial (skewed) keys', () => {
    // Exponentially spaced keys defeat naive interpolation (linear probes).
    const k = keysOf(Array.from({ length: 4096 }, (_, i) => (1n << BigInt(Math.floor(i / 64))) + BigInt(i)))
    let worst = 0
    for (let i = 0; i < 4096; i += 7) {
      const c = { probes: 0 }
      search(k, k.hi[i]!, k.lo[i]!, c)
      worst = Math.max(worst, c.probes)
    }
    expect(worst).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(4096)) + 2)
  })
})

test('on MD5 prefixes, interpolation with the radix table averages under 3 probes; binary needs ~log2(n)', () => {
  const n = 100000
  const values = Array.from({ length: n }, (_, i) => createHash('md5').update(`k${i}`).digest().readBigUInt64BE(0))
  const probes = { plain: 0, radix: 0, binary: 0 }
  const plain = keysOfAll(values)
  const withRadix = keysOfAll(values, true)
  for (let i = 0; i < 5000; i++) {
    const j = (i * 7919) % n
    const at = (k: IndexKeys, s: 'interpolation' | 'binary') => {
      const c = { probes: 0 }
      searchFn(s)(k, k.hi[j]!, k.lo[j]!, c)
      return c.probes
    }
    probes.plain += at(plain, 'interpolation')
    probes.radix += at(withRadix, 'interpolation')
    probes.binary += at(plain, 'binary')
  }
  expect(probes.radix / 5000).toBeLessThan(3)
  expect(probes.plain / 5000).toBeLessThan(6)
  expect(probes.binary / 5000).toBeGreaterThan(14)
})
