import fc from 'fast-check'
import { LineSplitter, type LineBatch } from '../../../../formats/input/lines'

/** Every line the splitter gives, as [line number, file offset, text], plus the failure. */
function linesOf(
  chunks: Buffer[],
  opts: { end?: number; blankWhitespace?: boolean } = {},
): { lines: Array<[number, number, string]>; failure?: string } {
  const splitter = new LineSplitter('f', 0, opts.end ?? Number.POSITIVE_INFINITY, 1, false, opts.blankWhitespace ?? false)
  const lines: Array<[number, number, string]> = []
  const take = (batch: LineBatch): void => {
    for (let i = 0; i < batch.count; i++) {
      lines.push([batch.firstLine + i, batch.base + batch.starts[i]!, batch.buf.toString('utf8', batch.starts[i], batch.ends[i])])
    }
  }
  for (const chunk of chunks) {
    for (const batch of splitter.push(chunk)) take(batch)
    if (splitter.failure !== undefined || splitter.done) break
  }
  if (splitter.failure === undefined) for (const batch of splitter.finish()) take(batch)
  return splitter.failure === undefined ? { lines } : { lines, failure: splitter.failure.message }
}

function cut(text: Buffer, at: number[]): Buffer[] {
  const points = [...new Set(at.map((p) => p % (text.length + 1)))].sort((a, b) => a - b)
  const chunks: Buffer[] = []
  let from = 0
  for (const p of points) {
    chunks.push(text.subarray(from, p))
    from = p
  }
  chunks.push(text.subarray(from))
  return chunks
}

describe('LineSplitter', () => {
  it('gives the same lines however the file is cut into chunks', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'é', '\n', '\r', '\t', '🎉', ' '), maxLength: 40 })
    fc.assert(
      fc.property(text, fc.array(fc.nat(), { maxLength: 10 }), fc.boolean(), (s, at, blankWhitespace) => {
        const bytes = Buffer.from(s, 'utf8')
        expect(linesOf(cut(bytes, at), { blankWhitespace })).toEqual(linesOf([bytes], { blankWhitespace }))
      }),
    )
  })

  it('splits on LF, drops CR before LF and a leading byte order mark', () => {
    expect(linesOf([Buffer.from('\ufeffa\r\nb\rc\nlast')]).lines).toEqual([
      [1, 3, 'a'],
      [2, 6, 'b\rc'],
      [3, 10, 'last'],
    ])
  })

  it('allows trailing blank lines only', () => {
    expect(linesOf([Buffer.from('a\n\n\r\n')])).toEqual({ lines: [[1, 0, 'a']] })
    expect(linesOf([Buffer.from('a\n\nb\n')])).toEqual({ lines: [[1, 0, 'a']], failure: 'f:2: empty line' })
    expect(linesOf([Buffer.from('a\n \nb\n')], { blankWhitespace: true }).failure).toBe('f:2: empty line')
    expect(linesOf([Buffer.from('a\n \nb\n')], { blankWhitespace: false }).failure).toBeUndefined()
  })

  it('stops at the first line starting at or after the end, unless blank lines must be checked', () => {
    // Line 2 starts at byte 2: outside [0, 2).
    expect(linesOf([Buffer.from('a\nb\nc\n')], { end: 2 }).lines).toEqual([[1, 0, 'a']])
    expect(linesOf([Buffer.from('a\nb\nc\n')], { end: 3 }).lines.map((l) => l[2])).toEqual(['a', 'b'])
    // The blank line 2 starts before the end; line 3 after it shows it was not trailing.
    expect(linesOf([Buffer.from('a\n\nc\n')], { end: 3 }).failure).toBe('f:2: empty line')
  })

  it('reports the first bad line in file order, after the lines before it', () => {
    const bytes = Buffer.concat([Buffer.from('a\nb\n'), Buffer.from([0xff]), Buffer.from('\n\nc\n')])
    expect(linesOf([bytes])).toEqual({
      lines: [
        [1, 0, 'a'],
        [2, 2, 'b'],
      ],
      failure: 'f:3: invalid UTF-8',
    })
  })
})
