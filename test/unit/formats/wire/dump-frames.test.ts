import fc from 'fast-check'
import { isStoreError } from '../../../../common/errors'
import { DumpDecoder, DumpEncoder, DUMP_FORMATS, type DumpFrame, type DumpFraming } from '../../../../formats/wire/dump-frames'

type Rec = [Uint8Array, Uint8Array | undefined]

/** A whole stream: a chunk frame, the records, the end frame. */
function encodeStream(framing: DumpFraming, records: readonly Rec[]): Buffer {
  const enc = new DumpEncoder(framing)
  const parts = [enc.chunk(0)]
  for (const [k, v] of records) parts.push(v === undefined ? enc.key(k) : enc.entry(k, v))
  parts.push(enc.end({ store: 's', version: 7, partitions: [0, 2] }))
  return Buffer.concat(parts)
}

/** Decodes in pieces of `step` bytes, as a socket delivers them. */
function decodeInPieces(framing: DumpFraming, bytes: Buffer, step: number): { frames: DumpFrame[]; decoder: DumpDecoder } {
  const decoder = new DumpDecoder(framing)
  const frames: DumpFrame[] = []
  for (let at = 0; at < bytes.length; at += step) {
    for (const f of decoder.push(bytes.subarray(at, at + step))) {
      frames.push(
        f.type === 'entry'
          ? { ...f, key: Buffer.from(f.key), value: Buffer.from(f.value) }
          : f.type === 'key'
            ? { ...f, key: Buffer.from(f.key) }
            : f,
      )
    }
  }
  return { frames, decoder }
}

const records = fc.array(
  fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.option(fc.uint8Array({ maxLength: 80 }), { nil: undefined })),
  { maxLength: 30 },
)

describe.each(DUMP_FORMATS)('dump framing: %s', (framing) => {
  test('any key and value bytes round-trip, whatever the pieces they arrive in', () => {
    fc.assert(
      fc.property(records, fc.integer({ min: 1, max: 64 }), (recs, step) => {
        const { frames, decoder } = decodeInPieces(framing, encodeStream(framing, recs), step)
        const got = frames.filter((f) => f.type === 'entry' || f.type === 'key')
        expect(got.map((f) => [[...f.key], f.type === 'entry' ? [...f.value] : undefined])).toEqual(
          recs.map(([k, v]) => [[...k], v === undefined ? undefined : [...v]]),
        )
        expect(frames[0]).toEqual({ type: 'chunk', chunk: 0 })
        expect(decoder.finish()).toMatchObject({ records: recs.length, store: 's', version: 7, partitions: [0, 2] })
      }),
    )
  })

  test('a stream cut anywhere before its end frame is detected', () => {
    const recs: Rec[] = [
      [Buffer.from('a'), Buffer.from('1')],
      [Buffer.from('b'), Buffer.from([0xff, 0x00])],
      [Buffer.from('c'), Buffer.alloc(0)],
    ]
    const whole = encodeStream(framing, recs)
    for (let cut = 0; cut < whole.length; cut++) {
      const decoder = new DumpDecoder(framing)
      let err: unknown
      try {
        decoder.push(whole.subarray(0, cut))
        decoder.finish()
      } catch (e) {
        err = e
      }
      expect(isStoreError(err, 'RO_UNAVAILABLE')).toBe(true)
    }
  })

  test('a changed byte is detected by the end frame (counts or checksum)', () => {
    const whole = encodeStream(framing, [
      [Buffer.from('key-1'), Buffer.from('value-1')],
      [Buffer.from('key-2'), Buffer.from('value-2')],
    ])
    // Flip a letter of the first value: the framing still parses, the checksum does not match.
    const at = whole.indexOf('value-1')
    const bad = Buffer.from(whole)
    bad[at] = 'V'.charCodeAt(0)
    expect(() => new DumpDecoder(framing).push(bad)).toThrow(/end frame says 2 records/)
  })
})

test('JSON lines carry text as text and other bytes as base64', () => {
  const enc = new DumpEncoder('jsonl')
  expect(enc.entry(Buffer.from('k é'), Buffer.from('v\t"x"')).toString()).toBe('{"key":"k é","value":"v\\t\\"x\\""}\n')
  expect(enc.entry(Buffer.from('k'), Buffer.from([0xc3, 0x28])).toString()).toBe('{"key":"k","value64":"wyg="}\n')
  expect(enc.key(Buffer.from([0xff])).toString()).toBe('{"key64":"/w=="}\n')
})

test('binary frames, byte by byte as docs/API.md gives them', () => {
  const enc = new DumpEncoder('binary')
  expect([...enc.chunk(3)]).toEqual([0x03, 0, 0, 0, 3])
  expect([...enc.entry(Buffer.from('k'), Buffer.from('vv'))]).toEqual([0x01, 0, 0, 0, 1, 0, 0, 0, 2, 0x6b, 0x76, 0x76])
  expect([...enc.key(Buffer.from('k'))]).toEqual([0x02, 0, 0, 0, 1, 0x6b])
  const end = enc.end({ store: 's', version: 1, partitions: [0] })
  expect(end[0]).toBe(0xff)
  expect(JSON.parse(end.subarray(5).toString())).toMatchObject({ records: 2, bytes: 5 + 12 + 6 })
})

describe.each(DUMP_FORMATS)('a batch of records (%s) encodes as the same frames one by one', (framing) => {
  test.each([false, true])('keys only: %s; values in the block or decoded apart', (keysOnly) => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.uint8Array({ maxLength: 300 })), { maxLength: 20 }),
        fc.boolean(),
        (recs, apart) => {
          // Lay the records out as a data block does: key then value, with a gap between records.
          const parts: Buffer[] = []
          const keyAt: number[] = []
          let at = 0
          for (const [k, v] of recs) {
            parts.push(Buffer.alloc(12), Buffer.from(k), Buffer.from(v))
            keyAt.push(at + 12)
            at += 12 + k.length + v.length
          }
          const batch = {
            count: recs.length,
            data: Buffer.concat(parts),
            keyAt,
            keyLen: recs.map(([k]) => k.length),
            valueLen: recs.map(([, v]) => v.length),
            values: apart ? recs.map(([, v]) => Buffer.from(v)) : undefined,
          }
          const one = new DumpEncoder(framing)
          const expected = Buffer.concat(recs.map(([k, v]) => (keysOnly ? one.key(k) : one.entry(k, v))))
          const many = new DumpEncoder(framing)
          expect(many.many(batch, keysOnly).equals(expected)).toBe(true)
          expect(many.end({ store: 's', version: 1, partitions: [] }).equals(one.end({ store: 's', version: 1, partitions: [] }))).toBe(
            true,
          )
        },
      ),
    )
  })
})
