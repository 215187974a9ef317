import fc from 'fast-check'
import { CsvRowParser, type CsvRow } from '../../../../formats/input/csv-rows'

/** What a row is, independent of how the bytes were chunked. */
function rowsOf(parser: CsvRowParser, chunks: Buffer[]): Array<{ fields: string[]; line: number; offset: number; blank: boolean }> {
  const rows: CsvRow[] = []
  for (const chunk of chunks) rows.push(...parser.push(chunk))
  rows.push(...parser.finish())
  return rows.map((r) => ({ fields: r.fields.map((f) => f.toString('utf8')), line: r.line, offset: r.offset, blank: r.blank }))
}

/** A CSV field written the RFC 4180 way. */
function quote(field: string): string {
  return /[",\r\n]/.test(field) || field === '' ? `"${field.replace(/"/g, '""')}"` : field
}

describe('CsvRowParser', () => {
  it('gives the same rows however the input is cut into chunks', () => {
    const field = fc.string({ unit: fc.constantFrom('a', 'é', ',', '"', '\n', '\r\n', ' ', '🎉'), maxLength: 6 })
    const table = fc.array(fc.array(field, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 6 })
    fc.assert(
      fc.property(table, fc.constantFrom('\n', '\r\n'), fc.array(fc.nat(), { maxLength: 8 }), (rows, eol, cuts) => {
        const text = Buffer.from(rows.map((r) => r.map(quote).join(',')).join(eol) + eol, 'utf8')
        const whole = rowsOf(new CsvRowParser('t.csv'), [text])
        expect(whole.map((r) => r.fields)).toEqual(rows)
        const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b)
        const chunks: Buffer[] = []
        let at = 0
        for (const p of points) {
          chunks.push(text.subarray(at, p))
          at = p
        }
        chunks.push(text.subarray(at))
        expect(rowsOf(new CsvRowParser('t.csv'), chunks)).toEqual(whole)
      }),
    )
  })

  it('reports rows at their first line and byte', () => {
    const rows = rowsOf(new CsvRowParser('t.csv'), [Buffer.from('a,b\n"x\ny",z\n\nq,r')])
    expect(rows).toEqual([
      { fields: ['a', 'b'], line: 1, offset: 0, blank: false },
      { fields: ['x\ny', 'z'], line: 2, offset: 4, blank: false },
      { fields: [''], line: 4, offset: 12, blank: true },
      { fields: ['q', 'r'], line: 5, offset: 13, blank: false },
    ])
  })

  it('tells a blank line from an empty quoted field', () => {
    const rows = rowsOf(new CsvRowParser('t.csv'), [Buffer.from('""\n\r\n,\n')])
    expect(rows.map((r) => [r.fields, r.blank])).toEqual([
      [[''], false],
      [[''], true],
      [['', ''], false],
    ])
  })
})
