import fc from 'fast-check'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LineRecords } from '../../../../../builder/engines/hadoop/line-records'
import { isStoreError } from '../../../../../common/errors'
import { readInput } from '../../../../../formats/input/read-input'
import type { InputFormat, ReadOptions } from '../../../../../formats/input/types'
import { makeTmp } from '../../../../../testkit/stores/tmp'

/**
 * The mapper's line-at-a-time parsing must give exactly the records the file readers give
 * (or fail where they fail), for any content: checked on generated files, good and bad.
 */
const tmp = makeTmp()
afterAll(tmp.cleanup)
let seq = 0

interface Rec {
  key: string
  value: string
  keyKind: string
  valueKind: string
  order: number
}
type Outcome = Rec[] | 'error'

async function viaReader(content: Buffer, format: InputFormat, opts: ReadOptions): Promise<Outcome> {
  const file = join(tmp.dir, `f${seq++}.${format}`)
  writeFileSync(file, content)
  const out: Rec[] = []
  try {
    for await (const r of readInput(file, format, opts))
      out.push({ key: r.key.toString('hex'), value: r.value.toString('hex'), keyKind: r.keyKind, valueKind: r.valueKind, order: r.order })
  } catch (err) {
    if (isStoreError(err, 'RO_BAD_INPUT')) return 'error'
    throw err
  }
  return out
}

/** As a Hadoop mapper sees the file (LF-separated lines with offsets), blank-line rule included. */
function viaLines(content: Buffer, format: InputFormat, opts: ReadOptions): Outcome {
  let header: Buffer | undefined
  if (format === 'csv') {
    const nl = content.indexOf(0x0a)
    header = content.subarray(0, nl < 0 ? content.length : nl)
    if (header[header.length - 1] === 0x0d) header = header.subarray(0, header.length - 1)
    if (header[0] === 0xef && header[1] === 0xbb && header[2] === 0xbf) header = header.subarray(3)
    if (header.length === 0) return 'error'
  }
  const parser = new LineRecords({
    format,
    keyField: opts.keyField,
    valueField: opts.valueField,
    csvHeaders: header ? [Buffer.from(header)] : undefined,
  })
  const out: Rec[] = []
  let firstBlank = -1
  try {
    let s = 0
    while (s < content.length) {
      let e = content.indexOf(0x0a, s)
      if (e < 0) e = content.length
      const r = parser.parse(content, s, e, s, 0, 'in')
      if (r === 'blank') {
        if (firstBlank < 0) firstBlank = s
      } else {
        if (firstBlank >= 0) return 'error'
        if (r !== 'header')
          out.push({
            key: r.key.toString('hex'),
            value: r.value.toString('hex'),
            keyKind: r.keyKind,
            valueKind: r.valueKind,
            order: r.order,
          })
      }
      s = e + 1
    }
  } catch (err) {
    if (isStoreError(err, 'RO_BAD_INPUT')) return 'error'
    throw err
  }
  return out
}

const outcomes = { records: 0, errors: 0 }
afterAll(() => {
  // The generators must exercise both paths, not just fail everywhere.
  expect(outcomes.records).toBeGreaterThan(200)
  expect(outcomes.errors).toBeGreaterThan(50)
})

async function same(content: Buffer, format: InputFormat, opts: ReadOptions = {}): Promise<void> {
  const a = await viaReader(content, format, opts)
  const b = viaLines(content, format, opts)
  if (a === 'error') outcomes.errors++
  else outcomes.records += a.length
  // With a BOM the reader's first order is 3 (past the BOM), the mapper's 0: only the relative order matters.
  const bom = content[0] === 0xef && content[1] === 0xbb && content[2] === 0xbf
  const strip = (o: Outcome): Outcome => (o === 'error' || !bom ? o : o.map((r, i) => ({ ...r, order: i })))
  expect(strip(b)).toEqual(strip(a))
}

const piece = (chars: string[], max = 8) => fc.array(fc.constantFrom(...chars), { maxLength: max }).map((a) => a.join(''))
const text = piece(['a', 'b', 'é', ' ', ',', '"', '.', '{', '}', '\\', '\t', 'x'])
const noTab = piece(['a', 'b', 'é', ' ', ',', '"', '.', 'x'])
const ending = fc.constantFrom('\n', '\r\n')

function join2(lines: string[], endings: string[], tail: string): Buffer {
  return Buffer.from(lines.map((l, i) => l + (i < lines.length - 1 ? endings[i % endings.length] : tail)).join(''), 'utf8')
}

describe('TSV', () => {
  const line = fc.oneof(
    { weight: 8, arbitrary: fc.tuple(noTab, text).map(([k, v]) => `${k}\t${v}`) },
    { weight: 1, arbitrary: noTab },
    { weight: 1, arbitrary: fc.constant('') },
  )
  test.each([{}, { keyField: '2' }, { keyField: '2', valueField: '1' }, { valueField: '3' }])(
    'same records as readTsv, options %j',
    async (opts) => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(line, { maxLength: 12 }),
          fc.array(ending, { minLength: 1, maxLength: 3 }),
          fc.constantFrom('', '\n'),
          fc.boolean(),
          async (lines, endings, tail, bom) => {
            const content = join2(lines, endings, tail)
            await same(bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), content]) : content, 'tsv', opts)
          },
        ),
        { numRuns: 150 },
      )
    },
  )

  test.each([
    ['invalid UTF-8', Buffer.concat([Buffer.from('a\t1\nb\t'), Buffer.from([0xff]), Buffer.from('\n')])],
    ['an overlong key', Buffer.from(`${'k'.repeat(70000)}\tv\n`)],
    ['an empty key', Buffer.from('\tv\n')],
  ])('%s fails on both paths', async (_what, content) => {
    expect(await viaReader(content, 'tsv', {})).toBe('error')
    expect(viaLines(content, 'tsv', {})).toBe('error')
  })
})

describe('JSON lines', () => {
  const scalar = fc.oneof(text, fc.integer(), fc.constant(null), fc.constant(true), fc.double({ noNaN: true, noDefaultInfinity: true }))
  const obj = fc.record(
    {
      key: fc.oneof(text, fc.integer(), fc.constant(null), fc.constant([1])),
      value: fc.oneof(scalar, fc.dictionary(noTab, scalar, { maxKeys: 2 })),
      extra: scalar,
    },
    { requiredKeys: [] },
  )
  const line = fc.oneof(
    { weight: 8, arbitrary: fc.tuple(obj, fc.constantFrom('', ' ', '\t')).map(([o, pad]) => `${pad}${JSON.stringify(o)}${pad}`) },
    { weight: 1, arbitrary: fc.constantFrom('{', '[1,2]', '"s"', 'null', '  ', '\t', '') },
  )
  test.each([{}, { valueField: 'extra' }, { keyField: 'extra' }])('same records as readJsonl, options %j', async (opts) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { maxLength: 10 }),
        fc.array(ending, { minLength: 1, maxLength: 3 }),
        fc.constantFrom('', '\n', '\n  \n'),
        async (lines, endings, tail) => {
          await same(join2(lines, endings, tail), 'jsonl', opts)
        },
      ),
      { numRuns: 150 },
    )
  })
})

describe('CSV', () => {
  const field = fc.oneof(
    noTab.filter((s) => !/[",]/.test(s)),
    text.map((s) => `"${s.replace(/"/g, '""')}"`),
  )
  const row = (n: number) => fc.array(field, { minLength: n, maxLength: n }).map((f) => f.join(','))
  const line = fc.oneof(
    { weight: 8, arbitrary: row(3) },
    { weight: 1, arbitrary: fc.oneof(row(2), fc.constant('a"b,c,d'), fc.constant('"a"x,b,c'), fc.constant('')) },
  )
  test.each([
    ['key,value,extra', {}],
    ['key,extra,other', {}],
    ['id,v,key', { keyField: 'id', valueField: 'key' }],
    ['key,key2,x', { keyField: 'nope' }],
  ] as const)('same records as readCsv, header %s', async (header, opts) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { maxLength: 10 }),
        fc.array(ending, { minLength: 1, maxLength: 3 }),
        fc.constantFrom('', '\n', '\r\n'),
        fc.boolean(),
        async (lines, endings, tail, bom) => {
          const content = join2([header, ...lines], endings, tail)
          await same(bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), content]) : content, 'csv', opts)
        },
      ),
      { numRuns: 100 },
    )
  })

  test('a quoted field with a line break is refused with a clear message', () => {
    const p = new LineRecords({ format: 'csv', csvHeaders: [Buffer.from('key,value')] })
    const line = Buffer.from('a,"multi')
    expect(() => p.parse(line, 0, line.length, 10, 0, 'in.csv')).toThrow(/in\.csv \(line at byte 10\): .*line breaks/)
  })

  test('a header that differs from the job spec is refused', () => {
    const p = new LineRecords({ format: 'csv', csvHeaders: [Buffer.from('key,value')] })
    const line = Buffer.from('key,other')
    expect(() => p.parse(line, 0, line.length, 0, 0, 'in.csv')).toThrow(/header differs/)
  })
})

test('messages name the file and byte offset', () => {
  const p = new LineRecords({ format: 'tsv' })
  const line = Buffer.from('no tab')
  expect(() => p.parse(line, 0, line.length, 1234, 0, 'hdfs://nn/in/a.tsv')).toThrow(
    'hdfs://nn/in/a.tsv (line at byte 1234): no tab separator',
  )
})
