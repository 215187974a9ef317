import { statSync } from 'node:fs'
import fc from 'fast-check'
import { readJsonl } from '../../../../formats/input/jsonl'
import { planSplits } from '../../../../formats/input/splits'
import { readTsv } from '../../../../formats/input/tsv'
import type { InputRecord, ReadOptions } from '../../../../formats/input/types'
import { collect, expectStoreError, tempDir, writeInput } from './helpers'

const dir = tempDir()

describe('planSplits', () => {
  it('cuts TSV and JSON lines files larger than the target into equal byte ranges', async () => {
    const big = writeInput(dir, 'big.tsv', 'x'.repeat(1000))
    const small = writeInput(dir, 'small.tsv', 'x'.repeat(10))
    const splits = await planSplits([big, small], 'tsv', 300)
    expect(splits).toEqual([
      { path: big, fileIndex: 0, start: 0, end: 250 },
      { path: big, fileIndex: 0, start: 250, end: 500 },
      { path: big, fileIndex: 0, start: 500, end: 750 },
      { path: big, fileIndex: 0, start: 750, end: 1000 },
      { path: small, fileIndex: 1, start: 0, end: 10 },
    ])
    expect((await planSplits([big], 'jsonl', 500)).length).toBe(2)
  })

  it('keeps CSV files whole', async () => {
    const big = writeInput(dir, 'big.csv', 'x'.repeat(1000))
    for (const format of ['csv'] as const) {
      expect(await planSplits([big, big], format, 10)).toEqual([
        { path: big, fileIndex: 0 },
        { path: big, fileIndex: 1 },
      ])
    }
  })

  it('gives an empty file one empty split', async () => {
    const empty = writeInput(dir, 'empty.jsonl', '')
    expect(await planSplits([empty], 'jsonl', 100)).toEqual([{ path: empty, fileIndex: 0, start: 0, end: 0 }])
  })

  it('names a missing file', async () => {
    await expectStoreError(() => planSplits([`${dir}/gone.tsv`], 'tsv', 100), 'RO_BAD_INPUT', /gone\.tsv: cannot read file: ENOENT/)
  })

  it('refuses a target that is not a positive byte count', async () => {
    await expect(planSplits([], 'tsv', 0)).rejects.toThrow(RangeError)
  })
})

/** What a reader produced for a file: records (comparable) or the error that stopped it. */
interface Outcome {
  records: Array<[string, string, number | undefined, number]>
  error?: string
}

async function outcome(records: AsyncIterable<InputRecord>): Promise<Outcome> {
  const out: Outcome = { records: [] }
  try {
    for await (const r of records) out.records.push([r.key.toString('hex'), r.value.toString('hex'), r.source.line, r.order])
  } catch (err) {
    out.error = err instanceof Error ? err.message : String(err)
  }
  return out
}

type LineReader = (path: string, opts: ReadOptions) => AsyncGenerator<InputRecord>

/**
 * Cut points for a file: random offsets, plus offsets of '\n' bytes and of the line
 * starts right after them, where an off-by-one in the split rule would show.
 */
function cutPoints(text: Buffer, picks: number[]): number[] {
  const newlines: number[] = []
  for (let p = text.indexOf(10); p !== -1; p = text.indexOf(10, p + 1)) newlines.push(p)
  const cuts = picks.map((pick, i) => {
    if (i % 3 === 0 || newlines.length === 0) return pick % (text.length + 1)
    const nl = newlines[pick % newlines.length]!
    return i % 3 === 1 ? nl : nl + 1
  })
  return [...new Set([0, ...cuts, text.length])].sort((a, b) => a - b)
}

const text = (maxLength: number): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom('k', 'é', '\t', ' ', '🎉', '\u0000'), maxLength })
/** Mostly good lines, sometimes anything (blank, no tab, not JSON) to exercise the errors. */
const tsvLine = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .tuple(
        text(4).filter((k) => k.length > 0 && !k.includes('\t')),
        text(6),
      )
      .map(([k, v]) => `${k}\t${v}`),
  },
  { weight: 1, arbitrary: text(6) },
)
const jsonLine = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .record({ key: fc.string({ minLength: 1, maxLength: 5 }), value: fc.string({ maxLength: 5 }) })
      .map((o) => JSON.stringify(o)),
  },
  { weight: 1, arbitrary: fc.constantFrom('', '  ', '{"key":1}', '[]', '{') },
)

describe.each<[string, LineReader, fc.Arbitrary<string>]>([
  ['TSV', readTsv, tsvLine],
  ['JSON lines', readJsonl, jsonLine],
])('%s byte-range splits', (_name, read, line) => {
  let seq = 0
  const cases = { read: 0, failed: 0 }
  afterAll(() => {
    // Both kinds of file came up, so both branches of the property were checked.
    expect(cases.read).toBeGreaterThan(10)
    expect(cases.failed).toBeGreaterThan(10)
  })

  it('together read exactly what one reader of the whole file reads', async () => {
    const file = fc.record({
      lines: fc.array(line, { maxLength: 12 }),
      eol: fc.constantFrom('\n', '\r\n'),
      lastEol: fc.boolean(),
      invalidAt: fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat() }),
    })
    await fc.assert(
      fc.asyncProperty(file, fc.array(fc.nat(), { maxLength: 6 }), async ({ lines, eol, lastEol, invalidAt }, picks) => {
        let text = Buffer.from(lines.join(eol) + (lastEol ? eol : ''), 'utf8')
        // Sometimes a byte that is not UTF-8, to check errors are found by the right split.
        if (invalidAt !== undefined && text.length > 0)
          text = Buffer.concat([text.subarray(0, invalidAt % text.length), Buffer.from([0xff]), text.subarray(invalidAt % text.length)])
        const path = writeInput(dir, `prop-${seq++}.txt`, text)
        const whole = await outcome(read(path, {}))
        const cuts = cutPoints(text, picks)
        const parts: Outcome[] = []
        for (let i = 0; i + 1 < cuts.length; i++) parts.push(await outcome(read(path, { start: cuts[i], end: cuts[i + 1] })))
        if (whole.error === undefined) {
          cases.read++
          expect(parts.map((p) => p.error).filter((e) => e !== undefined)).toEqual([])
          expect(parts.flatMap((p) => p.records)).toEqual(whole.records)
        } else {
          cases.failed++
          // The split holding the first bad line fails the same way; splits before it
          // read the same records as the whole-file reader did before failing.
          const failed = parts.findIndex((p) => p.error !== undefined)
          expect(parts[failed]?.error).toBe(whole.error)
          expect(parts.slice(0, failed + 1).flatMap((p) => p.records)).toEqual(whole.records)
        }
      }),
      { numRuns: 200 },
    )
  })
})

it('a split that starts deep in a file reports absolute line numbers', async () => {
  const lines = Array.from({ length: 50_000 }, (_, i) => `k${i}\tv${i}`)
  const path = writeInput(dir, 'deep.tsv', `${lines.join('\n')}\n`)
  const size = statSync(path).size
  const splits = await planSplits([path], 'tsv', Math.ceil(size / 7))
  const seen: number[] = []
  for (const split of splits) {
    for await (const rec of readTsv(split.path, { start: split.start, end: split.end })) {
      if (rec.key.toString() !== `k${(rec.source.line ?? 0) - 1}`) throw new Error(`line ${rec.source.line} holds ${rec.key.toString()}`)
      seen.push(rec.source.line ?? 0)
    }
  }
  expect(seen.length).toBe(lines.length)
  expect(seen[seen.length - 1]).toBe(lines.length)
  expect(await collect(readTsv(path, { start: size, end: size }))).toEqual([])
})
