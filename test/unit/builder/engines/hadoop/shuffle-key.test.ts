import fc from 'fast-check'
import { keyFieldPartition, keyFieldPartitionOf } from '../../../../../builder/engines/hadoop/partitioner'
import {
  lineBucket,
  mapStatsLine,
  parseMapStatsLine,
  parseShuffleLine,
  shuffleLine,
  shuffleLineSize,
  writeShuffleLine,
} from '../../../../../builder/engines/hadoop/shuffle-key'
import { compareMapped, type MappedRecord } from '../../../../../builder/mapped-record'

// Small alphabets on purpose: ties in bucket, hash and key prefixes are what matter.
const bytes = (max: number) =>
  fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a.map((b) => [0, 1, 0x2e, 0x30, 0x7f, 0x80, 0xff][b % 7]!)))
const record = fc.record({
  bucket: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant(0xffffffff)),
  hash: fc.uint8Array({ minLength: 16, maxLength: 16 }).map((h) => Buffer.from(h.map((b) => b % 3))),
  fileIndex: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant(0xffffffff)),
  order: fc.oneof(
    fc.integer({ min: 0, max: 5 }),
    fc.constant(2 ** 32 - 1),
    fc.constant(2 ** 32),
    fc.constant(2 ** 53),
    fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  ),
  key: bytes(6),
  value: fc.uint8Array({ maxLength: 40 }).map((v) => Buffer.from(v)),
})

function line(m: MappedRecord): Buffer {
  const b = Buffer.alloc(shuffleLineSize(m))
  const end = writeShuffleLine(m, b, 0)
  expect(end).toBe(b.length)
  return b
}

function key(l: Buffer): Buffer {
  return l.subarray(0, l.indexOf(0x09))
}

/** Records with distinct (bucket, fileIndex, order), as every real map output has. */
function distinct(list: MappedRecord[]): MappedRecord[] {
  const seen = new Set<string>()
  return list.filter((r) => {
    const id = `${r.bucket}/${r.fileIndex}/${r.order}`
    if (seen.has(id)) return false
    seen.add(id)
    return true
  })
}

test('byte order of shuffle keys and of whole lines is compareMapped order', () => {
  fc.assert(
    fc.property(
      fc.array(
        record.map((r) => ({ ...r, line: 0 }) as MappedRecord),
        { maxLength: 60 },
      ),
      (raw) => {
        const recs = distinct(raw)
        const expected = [...recs].sort(compareMapped).map((r) => line(r).toString('latin1'))
        const byKey = recs.map(line).sort((a, b) => Buffer.compare(key(a), key(b)))
        const byLine = recs.map(line).sort(Buffer.compare)
        expect(byKey.map((b) => b.toString('latin1'))).toEqual(expected)
        expect(byLine.map((b) => b.toString('latin1'))).toEqual(expected)
      },
    ),
    { numRuns: 500 },
  )
})

test('pairwise: the sign of Buffer.compare on keys equals the sign of compareMapped', () => {
  fc.assert(
    fc.property(record, record, (a0, b0) => {
      const a = { ...a0, line: 0 }
      const b = { ...b0, line: 0 }
      const c = compareMapped(a, b)
      const k = Buffer.compare(key(line(a)), key(line(b)))
      if (c === 0) expect(k).toBe(0)
      else expect(Math.sign(k)).toBe(Math.sign(c))
    }),
    { numRuns: 2000 },
  )
})

test('round trip: a line parses back to its record (line = order) and is text-safe', () => {
  fc.assert(
    fc.property(record, (r) => {
      const m = { ...r, line: 0 }
      const l = line(m)
      expect(l[l.length - 1]).toBe(0x0a)
      const body = l.subarray(0, l.length - 1)
      expect(/^[0-9a-f.]+\t[A-Za-z0-9+/=]*$/.test(body.toString('latin1'))).toBe(true)
      const back = parseShuffleLine(l, 0, l.length - 1)
      expect(back.bucket).toBe(m.bucket)
      expect(Buffer.from(back.hash).equals(m.hash)).toBe(true)
      expect(Buffer.from(back.key).equals(m.key)).toBe(true)
      expect(back.fileIndex).toBe(m.fileIndex)
      expect(back.order).toBe(m.order)
      expect(back.line).toBe(m.order)
      expect(Buffer.from(back.value).equals(m.value)).toBe(true)
      expect(lineBucket(l, 0, l.length - 1)).toBe(m.bucket)
    }),
    { numRuns: 1000 },
  )
})

test('layout: fixed-width fields, first field is the bucket', () => {
  const m: MappedRecord = {
    bucket: 10,
    hash: Buffer.alloc(16, 0xab),
    fileIndex: 2,
    order: 2 ** 32 + 5,
    line: 9,
    key: Buffer.from('k.'),
    value: Buffer.from('v\t\n'),
  }
  expect(shuffleLine(m)).toBe(`0000000a.${'ab'.repeat(16)}6b2e.00000002000001${'00000005'}\tdgkK`)
})

test('bad lines and out-of-range numbers are refused', () => {
  const parse = (s: string) => parseShuffleLine(Buffer.from(s), 0, s.length)
  expect(() => parse('no tab here')).toThrow(/shuffle line/)
  expect(() => parse(`0000000a.${'ab'.repeat(16)}6b2.0000000200000100000005\tx`)).toThrow(/layout/)
  expect(() => parse(`0000000A.${'ab'.repeat(16)}6b.0000000200000100000005\tx`)).toThrow(/hex/)
  expect(() => parse(`0000000a.${'ab'.repeat(16)}6b.00000002ffffffffffffff\tx`)).toThrow(/range/)
  const m: MappedRecord = {
    bucket: 0,
    hash: Buffer.alloc(16),
    fileIndex: 0,
    order: 2 ** 53 + 2,
    line: 0,
    key: Buffer.from('k'),
    value: Buffer.alloc(0),
  }
  expect(() => line(m)).toThrow(RangeError)
})

test('map statistics lines are told apart from record lines', () => {
  const s = Buffer.from(mapStatsLine('task_1_m_000003', '{"records":1}'))
  expect(parseMapStatsLine(s, 0, s.length - 1)).toBe('{"records":1}')
  expect(lineBucket(s, 0, s.length - 1)).toBe(-1)
  const r = line({ bucket: 1, hash: Buffer.alloc(16), fileIndex: 0, order: 0, line: 0, key: Buffer.from('k'), value: Buffer.alloc(0) })
  expect(parseMapStatsLine(r, 0, r.length - 1)).toBeUndefined()
  // Stats lines sort after every bucket line ("s" > any hex digit).
  expect(Buffer.compare(s, Buffer.from('ffffffff.'))).toBeGreaterThan(0)
  expect(mapStatsLine('attempt.x/y', '{}')).toBe('stats.attempt_x_y\t{}\n')
})

describe('KeyFieldBasedPartitioner', () => {
  // For ASCII fields the hash is Java's String.hashCode of the first field.
  test.each([
    ['abc', 96354],
    ['hello', 99162322],
    ['Aa', 2112],
    ['BB', 2112],
  ])('%s hashes like Java (%d)', (field, javaHash) => {
    for (const R of [1, 2, 7, 1000]) expect(keyFieldPartitionOf(`${field}.rest.of.key\tvalue`, R)).toBe((javaHash & 0x7fffffff) % R)
  })

  test('Integer.MIN_VALUE masks to 0 ("polygenelubricants".hashCode() == MIN_VALUE)', () => {
    expect(keyFieldPartitionOf('polygenelubricants', 7)).toBe(0)
  })

  test('bytes are signed: "é" (C3 A9) hashes to 31*-61 + -87 = -1978', () => {
    expect(keyFieldPartitionOf('é.x', 7)).toBe((-1978 & 0x7fffffff) % 7)
    expect(keyFieldPartitionOf('é.x', 7)).toBe(5)
  })

  test('only the first field counts; the value after the tab is ignored; empty key -> 0', () => {
    expect(keyFieldPartitionOf('00000003.aaaa\tzzz', 13)).toBe(keyFieldPartitionOf('00000003.bbbb\tyyy', 13))
    expect(keyFieldPartitionOf('00000003\tv', 13)).toBe(keyFieldPartitionOf('00000003.x', 13))
    expect(keyFieldPartitionOf('\tvalue', 5)).toBe(0)
    const b = Buffer.from('xx00000003.aa\tv\n')
    expect(keyFieldPartition(b, 2, b.length - 1, 13)).toBe(keyFieldPartitionOf('00000003', 13))
  })

  test('buckets spread over reducers', () => {
    const seen = new Set<number>()
    for (let bucket = 0; bucket < 64; bucket++) seen.add(keyFieldPartitionOf(bucket.toString(16).padStart(8, '0'), 4))
    expect(seen.size).toBe(4)
  })
})
