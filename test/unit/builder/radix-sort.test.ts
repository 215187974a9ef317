import { RadixSorter, sortTies } from '../../../builder/radix-sort'

/** The radix sort of the mapper's buffer against a plain comparator sort of the same keys. */
function prng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s
  }
}

function expected(n: number, buckets: Uint32Array, his: Uint32Array, los: Uint32Array, tail: Uint32Array): number[] {
  return Array.from({ length: n }, (_, i) => i).sort(
    (a, b) => buckets[a]! - buckets[b]! || his[a]! - his[b]! || los[a]! - los[b]! || tail[a]! - tail[b]! || a - b,
  )
}

function check(n: number, bucket: () => number, hi: () => number, lo: () => number, sorter = new RadixSorter()): void {
  const next = prng(n)
  const buckets = Uint32Array.from({ length: n }, bucket)
  const his = Uint32Array.from({ length: n }, hi)
  const los = Uint32Array.from({ length: n }, lo)
  const tail = Uint32Array.from({ length: n }, () => next() % 5)
  const order = sorter.sort(n, buckets, his, los)
  sortTies(order, buckets, his, los, (a, b) => tail[a]! - tail[b]! || a - b)
  expect([...order]).toEqual(expected(n, buckets, his, los, tail))
}

test('uniform 32-bit keys and a few buckets: the order of the comparator', () => {
  const r = prng(1)
  check(20000, () => r() % 6, r, r)
})

test('buckets above 16 bits and keys that differ only in their high digits', () => {
  const r = prng(2)
  check(
    5000,
    () => (r() % 3) * 70000 + (r() % 2),
    () => (r() % 4) << 16,
    () => (r() % 3) << 16,
  )
})

test('all prefixes equal (the collide test hash): ties ordered by the rest', () => {
  const r = prng(3)
  check(
    3000,
    () => 0,
    () => 0,
    () => r() % 2,
  )
  check(
    100,
    () => 1,
    () => 0xffffffff,
    () => 0xffffffff,
  )
})

test('one sorter reused for sizes up and down; 0 and 1 records', () => {
  const r = prng(4)
  const sorter = new RadixSorter()
  for (const n of [0, 1, 2, 1000, 10, 4000, 3]) check(n, () => r() % 3, r, r, sorter)
})
