import fc from 'fast-check'
import { isStoreError } from '../../../../common/errors'
import { RespErrorReply, RespMap, RespVerbatim, type RespValue } from '../../../../formats/wire/resp'
import { RespPipeline } from '../../../../formats/wire/resp-pipeline'
import { NEED_MORE, RespReplyParser } from '../../../../formats/wire/resp-reply'
import { encodeCommand, RespWriter } from '../../../../formats/wire/resp-writer'

function bytesOf(write: (w: RespWriter) => void, initial = 8): string {
  const w = new RespWriter(initial)
  write(w)
  return w.take().toString('latin1')
}

function parseAll(bytes: Buffer, pieces = 1): RespValue[] {
  const p = new RespReplyParser()
  const out: RespValue[] = []
  const step = Math.max(1, Math.ceil(bytes.length / pieces))
  for (let i = 0; i < bytes.length; i += step) {
    p.push(bytes.subarray(i, i + step))
    for (let v = p.next(); v !== NEED_MORE; v = p.next()) out.push(v)
  }
  return out
}

describe('RespWriter', () => {
  test('every reply type, RESP2 and RESP3, byte for byte', () => {
    expect(bytesOf((w) => w.simple('OK'))).toBe('+OK\r\n')
    expect(bytesOf((w) => w.error('ERR bad\r\nthing'))).toBe('-ERR bad  thing\r\n')
    expect(bytesOf((w) => w.integer(0))).toBe(':0\r\n')
    expect(bytesOf((w) => w.integer(-1234567890123))).toBe(':-1234567890123\r\n')
    expect(bytesOf((w) => w.integer(Number.MAX_SAFE_INTEGER))).toBe(`:${Number.MAX_SAFE_INTEGER}\r\n`)
    expect(bytesOf((w) => w.bulk(Buffer.from('')))).toBe('$0\r\n\r\n')
    expect(bytesOf((w) => w.bulk(Buffer.from('héllo')))).toBe('$6\r\nh\xc3\xa9llo\r\n')
    expect(bytesOf((w) => w.nil(2))).toBe('$-1\r\n')
    expect(bytesOf((w) => w.nil(3))).toBe('_\r\n')
    expect(bytesOf((w) => w.map(2, 2))).toBe('*4\r\n')
    expect(bytesOf((w) => w.map(2, 3))).toBe('%2\r\n')
    expect(bytesOf((w) => w.set(1, 3))).toBe('~1\r\n')
    expect(bytesOf((w) => w.verbatim('a\r\nb', 3))).toBe('=8\r\ntxt:a\r\nb\r\n')
    expect(bytesOf((w) => w.verbatim('ab', 2))).toBe('$2\r\nab\r\n')
    expect(bytesOf((w) => w.command(['GET', Buffer.from([0, 1])]))).toBe('*2\r\n$3\r\nGET\r\n$2\r\n\x00\x01\r\n')
  })

  test('grows past its initial size without losing bytes; release() drops a grown or held buffer', () => {
    const w = new RespWriter(16)
    const big = Buffer.alloc(100_000, 7)
    w.bulk(big)
    w.integer(5)
    const out = w.take()
    expect(out.length).toBe(100_000 + '$100000\r\n'.length + 2 + 4)
    expect(parseAll(Buffer.from(out))).toEqual([big, 5])
    const before = w.buf
    w.release(false, 1 << 30)
    expect(w.buf).toBe(before)
    w.release(true)
    expect(w.buf).not.toBe(before)
    expect(w.length).toBe(0)
  })
})

describe('RespReplyParser', () => {
  test('reads RESP3 types: null, boolean, double, big number, map, set, verbatim, attribute', () => {
    const text =
      '_\r\n#t\r\n#f\r\n,1.5\r\n,inf\r\n(12345678901234567890\r\n%1\r\n$1\r\nk\r\n:1\r\n~2\r\n+a\r\n+b\r\n=7\r\ntxt:abc\r\n|1\r\n+x\r\n+y\r\n:9\r\n*-1\r\n$-1\r\n'
    const got = parseAll(Buffer.from(text, 'latin1'))
    expect(got.slice(0, 6)).toEqual([null, true, false, 1.5, Infinity, 12345678901234567890n])
    const m = got[6] as RespMap
    expect(m).toBeInstanceOf(RespMap)
    expect(m.get('k')).toBe(1)
    expect(got[7]).toEqual(['a', 'b'])
    expect(got[8]).toEqual(new RespVerbatim('txt', Buffer.from('abc')))
    expect(got.slice(9)).toEqual([9, null, null])
  })

  test('error replies are values with their code', () => {
    const [e] = parseAll(Buffer.from('-WRONGPASS invalid password\r\n'))
    expect(e).toBeInstanceOf(RespErrorReply)
    expect((e as RespErrorReply).code).toBe('WRONGPASS')
  })

  test('property: what the writer writes, the parser reads back, in any number of pieces', () => {
    const leaf = fc.oneof(
      fc.uint8Array({ maxLength: 30 }).map((a) => ({ kind: 'bulk' as const, v: Buffer.from(a) })),
      fc.integer().map((v) => ({ kind: 'int' as const, v })),
      fc.constant({ kind: 'nil' as const, v: null }),
      fc.stringMatching(/^[a-zA-Z0-9 ]{0,20}$/).map((v) => ({ kind: 'simple' as const, v })),
    )
    fc.assert(
      fc.property(
        fc.array(fc.array(leaf, { maxLength: 6 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 50 }),
        (arrays, pieces) => {
          const w = new RespWriter(4)
          for (const arr of arrays) {
            w.array(arr.length)
            for (const x of arr) {
              if (x.kind === 'bulk') w.bulk(x.v)
              else if (x.kind === 'int') w.integer(x.v)
              else if (x.kind === 'nil') w.nil(2)
              else w.simple(x.v)
            }
          }
          const got = parseAll(Buffer.from(w.take()), pieces)
          expect(got).toEqual(arrays.map((arr) => arr.map((x) => x.v)))
        },
      ),
      { numRuns: 300 },
    )
  })

  test('a large bulk reply arriving in many pieces', () => {
    const big = Buffer.alloc(1 << 20, 3)
    const w = new RespWriter()
    w.array(2)
    w.bulk(big)
    w.bulk(Buffer.from('x'))
    expect(parseAll(Buffer.from(w.take()), 300)).toEqual([[big, Buffer.from('x')]])
  })

  test('malformed replies are RO_CORRUPT; limits hold', () => {
    const bad = ['?x\r\n', ':abc\r\n', '$3\r\nabcde', '*-2\r\n', '#x\r\n', ',\r\n', '(1.5\r\n', '=3\r\nabc\r\n']
    for (const b of bad) {
      let err: unknown
      try {
        parseAll(Buffer.from(b))
      } catch (e) {
        err = e
      }
      expect(isStoreError(err, 'RO_CORRUPT')).toBe(true)
    }
    const p = new RespReplyParser({ limits: { maxBulkBytes: 10, maxElements: 5, maxDepth: 2 } })
    for (const b of ['$11\r\n', '*6\r\n', '*1\r\n*1\r\n*1\r\n']) {
      const q = new RespReplyParser({ limits: { maxBulkBytes: 10, maxElements: 5, maxDepth: 2 } })
      q.push(Buffer.from(b))
      expect(() => q.next()).toThrow(/RESP reply/)
    }
    p.push(Buffer.from('$10\r\n0123456789\r\n'))
    expect(p.next()).toEqual(Buffer.from('0123456789'))
  })

  test('property: random bytes never throw anything but RO_CORRUPT', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (raw) => {
        try {
          parseAll(Buffer.from(raw), 3)
        } catch (err) {
          expect(isStoreError(err, 'RO_CORRUPT')).toBe(true)
        }
      }),
      { numRuns: 2000 },
    )
  })
})

describe('RespPipeline', () => {
  test('replies go to the commands in the order they were sent, across pieces', () => {
    const p = new RespPipeline()
    const got: string[] = []
    p.send(encodeCommand(['GET', 'a']), (err, r) => got.push(err ? `err ${err.message}` : String(r)))
    p.send(encodeCommand(['GET', 'b']), (err, r) =>
      got.push(err ? `err ${err.message}` : r instanceof RespErrorReply ? `E:${r.code}` : String(r)),
    )
    let written = ''
    p.flush((b) => {
      written += b.toString('latin1')
      return false
    })
    expect(written).toBe('*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n')
    expect(p.pending).toBe(2)
    expect(p.onData(Buffer.from('+one\r\n-RO_UNA'))).toBeUndefined()
    expect(got).toEqual(['one'])
    expect(p.onData(Buffer.from('VAILABLE stale\r\n'))).toBeUndefined()
    expect(got).toEqual(['one', 'E:RO_UNAVAILABLE'])
  })

  test('fail() ends the waiting commands; a reply nobody asked for fails the pipeline', () => {
    const p = new RespPipeline()
    const got: string[] = []
    p.send(encodeCommand(['PING']), (err) => got.push(err?.message ?? 'ok'))
    p.fail(new Error('gone'))
    p.send(encodeCommand(['PING']), (err) => got.push(err?.message ?? 'ok'))
    expect(got).toEqual(['gone', 'gone'])
    const q = new RespPipeline()
    expect(q.onData(Buffer.from('+PONG\r\n'))?.message).toMatch(/no command was waiting/)
  })
})
