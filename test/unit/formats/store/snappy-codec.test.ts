import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { compressSync, uncompressSync } from 'snappy'
import { nativeFunctions } from '../../../../common/native'
import { codecByName } from '../../../../formats/store/chunk/codec'
import { mulberry32 } from '../../../../common/prng'
import { realisticValues } from '../../../../testkit/stores/realistic-values'

const native = nativeFunctions()
const maybe = native ? describe : describe.skip
const codec = codecByName('snappy')

/** The snappy package's reading of a block: its bytes, or 'error'. */
function reference(block: Buffer): Buffer | 'error' {
  try {
    return uncompressSync(block, { asBuffer: true }) as Buffer
  } catch {
    return 'error'
  }
}

/** Our reading: its bytes, or the error's code. */
function ours(block: Buffer): Buffer | string {
  try {
    return codec.decode(block)
  } catch (err) {
    return (err as { code?: string }).code ?? String(err)
  }
}

const gen = realisticValues(5)
const shapes: [string, Buffer][] = [
  ['empty', Buffer.alloc(0)],
  ['one byte', Buffer.from([7])],
  ['incompressible', randomBytes(3000)],
  ['64 KiB of a short pattern (overlapping copies)', Buffer.alloc(64 << 10, 'ab')],
  ['long runs (4-byte offsets)', Buffer.concat([randomBytes(70_000), randomBytes(10), Buffer.alloc(100_000, 1), randomBytes(70_000)])],
  ['4 MiB', randomBytes(4 << 20)],
  ['realistic', gen.next()],
]

maybe('snappy values decoded by the addon', () => {
  test.each(shapes)('%s: the same bytes as the snappy package', (_, value) => {
    const block = compressSync(value)
    const got = codec.decode(block)
    expect(got.equals(value)).toBe(true)
    expect(got.equals(reference(block) as Buffer)).toBe(true)
  })

  // The snappy package writes blocks of 64 KiB, so never a 4-byte offset: each element kind, by hand.
  test.each([
    ['a literal of 1-60 bytes, a copy with a 1-byte offset', [0x08, 0x0c, 0x41, 0x42, 0x43, 0x44, 0x01, 0x04], 'ABCDABCD'],
    ['a copy with a 2-byte offset', [0x08, 0x0c, 0x41, 0x42, 0x43, 0x44, 0x0e, 0x04, 0x00], 'ABCDABCD'],
    ['a copy with a 4-byte offset', [0x08, 0x0c, 0x41, 0x42, 0x43, 0x44, 0x0f, 0x04, 0x00, 0x00, 0x00], 'ABCDABCD'],
    ['an overlapping copy (offset 1)', [0x06, 0x00, 0x41, 0x05, 0x01], 'AAAAAA'],
    ['a literal with its length in the next byte', [0x03, 0xf0, 0x02, 0x41, 0x42, 0x43], 'ABC'],
    ['a literal with its length in the next 4 bytes', [0x02, 0xfc, 0x01, 0x00, 0x00, 0x00, 0x41, 0x42], 'AB'],
  ])('%s', (_, bytes, text) => {
    const block = Buffer.from(bytes)
    expect(ours(block)).toEqual(Buffer.from(text))
    expect(reference(block)).toEqual(Buffer.from(text))
  })

  test('2,000 realistic values', () => {
    for (let i = 0; i < 2000; i++) {
      const v = gen.next()
      expect(codec.decode(compressSync(v)).equals(v)).toBe(true)
    }
  })

  test('every damaged block reads as the snappy package reads it, or is RO_CORRUPT where it refuses it; none crashes', () => {
    const rand = mulberry32(42)
    let refused = 0
    let decoded = 0
    for (const value of [gen.next(), gen.next(), Buffer.alloc(3000, 'xyz'), randomBytes(500)]) {
      const block = compressSync(value)
      const cases: Buffer[] = []
      for (let cut = 0; cut < block.length; cut++) cases.push(block.subarray(0, cut))
      for (let i = 0; i < block.length; i++) {
        const bad = Buffer.from(block)
        bad[i] = (bad[i] as number) ^ (1 + (rand() % 255))
        cases.push(bad)
      }
      cases.push(Buffer.concat([block, Buffer.from([0])]))
      for (const c of cases) {
        const want = reference(c)
        const got = ours(c)
        if (want === 'error') {
          expect(got).toBe('RO_CORRUPT')
          refused++
        } else {
          expect(Buffer.isBuffer(got) && got.equals(want)).toBe(true)
          decoded++
        }
      }
    }
    expect(refused).toBeGreaterThan(100)
    expect(decoded).toBeGreaterThan(10)
  })

  test.each([
    ['a preamble longer than 5 bytes', [0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
    ['a declared length over 32 bits', [0xff, 0xff, 0xff, 0xff, 0x1f]],
    ['a copy before any output', [0x04, 0x01, 0x01]],
    ['a copy of offset 0', [0x05, 0x00, 0x41, 0x01, 0x00]],
    ['a copy reaching before the start', [0x06, 0x00, 0x41, 0x05, 0x05]],
    ['a copy past the declared length', [0x03, 0x00, 0x41, 0x05, 0x01]],
    ['a literal past the input', [0x05, 0x10, 0x41]],
    ['output shorter than declared', [0x05, 0x00, 0x41]],
  ])('%s is RO_CORRUPT', (_, bytes) => {
    expect(ours(Buffer.from(bytes))).toBe('RO_CORRUPT')
  })
})

test('without the addon (ROSTORE_NATIVE=0) the snappy package decodes the same values', () => {
  const value = gen.next()
  const block = compressSync(value).toString('base64')
  const codecPath = join(__dirname, '..', '..', '..', '..', 'formats', 'store', 'chunk', 'codec.js')
  const script = `
    const { codecByName } = require(${JSON.stringify(codecPath)})
    const { nativeFunctions } = require(${JSON.stringify(join(__dirname, '..', '..', '..', '..', 'common', 'native.js'))})
    const c = codecByName('snappy')
    let bad
    try { c.decode(Buffer.from([0x05, 0x10, 0x41])) } catch (err) { bad = err.code }
    process.stdout.write(JSON.stringify({ native: nativeFunctions() !== undefined, value: c.decode(Buffer.from(${JSON.stringify(block)}, 'base64')).toString('base64'), bad }))`
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, ROSTORE_NATIVE: '0' } })
  expect(r.status).toBe(0)
  expect(JSON.parse(r.stdout)).toEqual({ native: false, value: value.toString('base64'), bad: 'RO_CORRUPT' })
})
