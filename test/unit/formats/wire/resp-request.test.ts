import fc from 'fast-check'
import { isStoreError } from '../../../../common/errors'
import { RespRequestParser } from '../../../../formats/wire/resp-request'
import { encodeCommand } from '../../../../formats/wire/resp-writer'

/** Every command the parser yields, as arrays of argument strings (latin1, so any byte survives). */
function parseAll(p: RespRequestParser, chunks: readonly Buffer[]): string[][] {
  const out: string[][] = []
  for (const c of chunks) {
    p.push(c)
    while (p.next()) {
      const args: string[] = []
      for (let i = 0; i < p.argc; i++) args.push(p.args.toString('latin1', p.starts[i], p.ends[i]))
      out.push(args)
    }
  }
  return out
}

/** Splits bytes at the given cut points (sorted, deduplicated, inside the buffer). */
function cut(bytes: Buffer, points: readonly number[]): Buffer[] {
  const at = [...new Set(points.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b)
  const out: Buffer[] = []
  let prev = 0
  for (const p of at) {
    out.push(bytes.subarray(prev, p))
    prev = p
  }
  out.push(bytes.subarray(prev))
  return out
}

function protocolError(fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    if (isStoreError(err, 'RO_BAD_REQUEST')) return err.message
    throw err
  }
  throw new Error('no protocol error')
}

describe('RespRequestParser', () => {
  test('multibulk commands, several per chunk, any bytes in arguments', () => {
    const p = new RespRequestParser()
    const bin = Buffer.from([0, 13, 10, 255, 0x2a, 0x24])
    const bytes = Buffer.concat([encodeCommand(['GET', 'users:1']), encodeCommand(['MGET', 'a', '', bin]), encodeCommand(['PING'])])
    expect(parseAll(p, [bytes])).toEqual([['GET', 'users:1'], ['MGET', 'a', '', bin.toString('latin1')], ['PING']])
    expect(p.buffered).toBe(0)
  })

  test('detach(): a reused input buffer, overwritten after every read, loses no byte of a command in pieces', () => {
    const cmds = [
      ['MGET', 'k1', 'k22', 'x'.repeat(300)],
      ['GET', 'z'],
      ['SET', 'a', Buffer.from([0, 13, 10, 255]).toString('latin1')],
      ['PING'],
    ]
    const bytes = Buffer.concat(cmds.map((c) => encodeCommand(c.map((a) => Buffer.from(a, 'latin1')))))
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 12 }), (points) => {
        const p = new RespRequestParser()
        // One buffer for every read, as a socket's shared read buffer (server/resp/read-buffer-socket.ts).
        const shared = Buffer.alloc(bytes.length)
        const out: string[][] = []
        for (const piece of cut(bytes, points)) {
          piece.copy(shared)
          p.push(shared.subarray(0, piece.length))
          while (p.next()) {
            const args: string[] = []
            for (let i = 0; i < p.argc; i++) args.push(p.args.toString('latin1', p.starts[i], p.ends[i]))
            out.push(args)
          }
          p.detach()
          shared.fill(0x2a)
        }
        expect(out).toEqual(cmds)
        expect(p.buffered).toBe(0)
      }),
    )
  })

  test('a command split at every byte boundary parses the same', () => {
    const bytes = Buffer.concat([encodeCommand(['MGET', 'k1', 'k22', 'x'.repeat(300)]), encodeCommand(['GET', 'z'])])
    for (let i = 0; i <= bytes.length; i++) {
      const p = new RespRequestParser()
      expect(parseAll(p, [bytes.subarray(0, i), bytes.subarray(i)])).toEqual([
        ['MGET', 'k1', 'k22', 'x'.repeat(300)],
        ['GET', 'z'],
      ])
    }
    // One byte at a time, too.
    const p = new RespRequestParser()
    expect(
      parseAll(
        p,
        [...bytes].map((b) => Buffer.from([b])),
      ),
    ).toEqual([
      ['MGET', 'k1', 'k22', 'x'.repeat(300)],
      ['GET', 'z'],
    ])
  })

  test('property: any commands, cut anywhere, come out as sent', () => {
    const arg = fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a))
    fc.assert(
      fc.property(
        fc.array(fc.array(arg, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (cmds, points) => {
          const bytes = Buffer.concat(cmds.map((c) => encodeCommand(c)))
          const got = parseAll(new RespRequestParser(), cut(bytes, points))
          expect(got).toEqual(cmds.map((c) => c.map((a) => a.toString('latin1'))))
        },
      ),
      { numRuns: 300 },
    )
  })

  test('inline commands: words, quotes, escapes, empty lines skipped', () => {
    const p = new RespRequestParser()
    const got = parseAll(p, [Buffer.from("PING\r\n\r\nGET  users:1 \nECHO \"a b\\x41\\n\" 'it\\'s'\r\n", 'latin1')])
    expect(got).toEqual([['PING'], ['GET', 'users:1'], ['ECHO', 'a bA\n', "it's"]])
  })

  test('inline and multibulk mixed, inline split across chunks', () => {
    const p = new RespRequestParser()
    expect(parseAll(p, [Buffer.from('GE'), Buffer.from('T a\r'), Buffer.from('\n*1\r\n$4\r\nPING\r\n')])).toEqual([['GET', 'a'], ['PING']])
  })

  test('*0 and *-1 carry no command', () => {
    const p = new RespRequestParser()
    expect(parseAll(p, [Buffer.from('*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n')])).toEqual([['PING']])
  })

  test('limits: arguments, bulk length, inline length, query buffer', () => {
    const small = { maxArgs: 3, maxBulkBytes: 10, maxInlineBytes: 20, maxCommandBytes: 100 }
    expect(protocolError(() => parseAll(new RespRequestParser(small), [Buffer.from('*4\r\n')]))).toMatch(/invalid multibulk length/)
    expect(protocolError(() => parseAll(new RespRequestParser(small), [Buffer.from('*1\r\n$11\r\n')]))).toMatch(/invalid bulk length/)
    expect(protocolError(() => parseAll(new RespRequestParser(small), [Buffer.from('a'.repeat(21))]))).toMatch(/too big inline request/)
    expect(protocolError(() => parseAll(new RespRequestParser(small), [Buffer.from('A B C D\r\n')]))).toMatch(/too many arguments/)
    // Three arguments of 10 bytes fit the per-argument bound but not the query buffer once the
    // declared sizes add up: refused when the third length is read, before its bytes arrive.
    const big = { ...small, maxCommandBytes: 40 }
    expect(
      protocolError(() => parseAll(new RespRequestParser(big), [Buffer.from('*3\r\n$10\r\naaaaaaaaaa\r\n$10\r\nbbbbbbbbbb\r\n$10\r\n')])),
    ).toMatch(/query buffer/)
    // Huge declared sizes are refused at once, whatever the chunking.
    expect(protocolError(() => parseAll(new RespRequestParser(), [Buffer.from('*1\r\n$99999999999\r\n')]))).toMatch(/invalid bulk length/)
    expect(protocolError(() => parseAll(new RespRequestParser(), [Buffer.from('*2147483648\r\n')]))).toMatch(/invalid multibulk length/)
  })

  test('framing errors name what was wrong', () => {
    const cases: [string, RegExp][] = [
      ['*1\r\nx', /expected '\$', got 'x'/],
      ['*1\r\n$3\r\nabcd\r\n', /expected CRLF after a bulk argument/],
      ['*x\r\n', /invalid multibulk length/],
      ['*1\r\n$-1\r\n', /invalid bulk length/],
      ['*1\n', /invalid multibulk length/],
      ['*1\r\n$\r\n', /invalid bulk length/],
      ['ECHO "abc\r\n', /unbalanced quotes/],
      ['ECHO "abc"d\r\n', /unbalanced quotes/],
      [`*${'1'.repeat(30)}`, /invalid multibulk length/],
    ]
    for (const [input, re] of cases)
      expect(protocolError(() => parseAll(new RespRequestParser(), [Buffer.from(input, 'latin1')]))).toMatch(re)
  })

  test('property: random bytes either parse, wait for more, or fail with RO_BAD_REQUEST; never anything else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.array(fc.nat(), { maxLength: 5 }), (raw, points) => {
        const p = new RespRequestParser({ maxArgs: 50, maxBulkBytes: 100, maxInlineBytes: 100, maxCommandBytes: 1000 })
        try {
          parseAll(p, cut(Buffer.from(raw), points))
        } catch (err) {
          expect(isStoreError(err, 'RO_BAD_REQUEST')).toBe(true)
        }
        expect(p.buffered).toBeLessThanOrEqual(1000 + 200)
      }),
      { numRuns: 2000 },
    )
  })

  test('property: mutated valid frames never crash the parser', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 12 }), { minLength: 1, maxLength: 5 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        (args, flips) => {
          const bytes = Buffer.from(encodeCommand(args))
          for (const [at, v] of flips) bytes[at % bytes.length] = v
          try {
            parseAll(new RespRequestParser(), [bytes])
          } catch (err) {
            expect(isStoreError(err, 'RO_BAD_REQUEST')).toBe(true)
          }
        },
      ),
      { numRuns: 1000 },
    )
  })

  test('an MGET of 5,000 keys arriving in 200 pieces comes out whole', () => {
    const keys = Array.from({ length: 5000 }, (_, i) => `store:key-${i}`)
    const bytes = encodeCommand(['MGET', ...keys])
    const p = new RespRequestParser()
    const got = parseAll(
      p,
      cut(
        bytes,
        Array.from({ length: 200 }, (_, i) => i * 397),
      ),
    )
    expect(got).toEqual([['MGET', ...keys]])
  })
})
