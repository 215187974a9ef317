import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Binary, RecordBatchStreamWriter, Table, tableToIPC, Utf8, vectorFromArray } from 'apache-arrow'
import { buildStore } from '../../builder/engines/local/build-job'
import { parseCluster } from '../../cluster/cluster'
import { isStoreError } from '../../common/errors'
import { cliPath } from '../../common/paths'
import type { InputFormat } from '../../formats/input/types'
import { openStore } from '../../formats/store/read/store-reader'
import { verifyStore } from '../../formats/store/scan/verify'
import { reportFigures } from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'
import { writeParquetWithDuckdb } from '../../testkit/stores/duckdb'
import { writeParquet } from '../unit/formats/input/write-parquet'

/**
 * Promise 1 of docs/RELIABILITY.md: bad input never becomes a bad store. A corpus of
 * broken and awkward inputs for every format, each built for real (buildStore, one worker;
 * a few through the CLI). Each case ends in exactly one of two ways:
 * - a StoreError RO_BAD_INPUT / RO_DUPLICATE_KEY whose message starts with the file and the
 *   line (text formats) or row (Parquet/Arrow), and no output directory, no temp output,
 *   no spilled runs left behind;
 * - a store that verifies and returns every expected key's exact bytes.
 * Anything else (another error class, a crash, a partial store) fails the case.
 */

jest.setTimeout(180_000)
const tmp = makeTmp('rostore-bad-input-')
const cluster = parseCluster({ name: 'bad-input', nodes: [{ id: 0, host: '127.0.0.1', port: 7000, partitions: [0, 1] }] })

type Bytes = string | Buffer
type Expect =
  | { readonly error: 'RO_BAD_INPUT' | 'RO_DUPLICATE_KEY'; readonly at: string; readonly reason: RegExp }
  | {
      readonly records: readonly (readonly [Bytes, Bytes])[]
      readonly keySerializer?: 'string' | 'bytes'
      readonly absent?: readonly Bytes[]
    }

interface Case {
  readonly name: string
  readonly format: InputFormat
  /** Writes the input file (its path ends with the format's extension). */
  readonly write: (path: string) => void | Promise<void>
  readonly expect: Expect
  readonly keyField?: string
  readonly valueField?: string
  /** Memory budget of the build (default 64 MiB; the 100 MB cases use the CLI default, 1024). */
  readonly memoryMb?: number
  /** Run through `rostore build` (and `rostore verify`) instead of buildStore. */
  readonly cli?: boolean
}

// ---------------------------------------------------------------------------------------
// Input makers.

const b = (...parts: (string | number[] | Buffer)[]): Buffer =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.isBuffer(p) ? p : Buffer.from(p))))
const file = (content: Buffer | string) => (path: string) => writeFileSync(path, content)
const lines = (...ls: (string | Buffer)[]) => file(b(...ls.map((l) => b(l, '\n'))))

async function arrow(
  path: string,
  columns: Record<string, (string | Uint8Array | null)[]>,
  format: 'file' | 'stream',
  binary = false,
): Promise<void> {
  const vectors = Object.fromEntries(
    Object.entries(columns).map(([name, values]) => [name, vectorFromArray(values, binary && name === 'key' ? new Binary() : new Utf8())]),
  )
  writeFileSync(path, tableToIPC(new Table(vectors), format))
}

/** An Arrow stream of three record batches (10 rows each), as bytes, with each message's start. */
async function threeBatchStream(): Promise<{ bytes: Buffer; messages: number[] }> {
  const batch = (from: number) =>
    new Table({
      key: vectorFromArray(
        Array.from({ length: 10 }, (_, i) => `k${from + i}`),
        new Utf8(),
      ),
      value: vectorFromArray(
        Array.from({ length: 10 }, (_, i) => `v${from + i}`),
        new Utf8(),
      ),
    })
  const table = new Table([...batch(0).batches, ...batch(10).batches, ...batch(20).batches])
  const bytes = Buffer.from(await RecordBatchStreamWriter.writeAll(table).toUint8Array())
  const messages: number[] = []
  for (let i = 0; i + 4 <= bytes.length; i += 8) if (bytes.readUInt32LE(i) === 0xffffffff) messages.push(i)
  return { bytes, messages }
}

let parquetSample: Buffer | undefined
async function parquetBytes(): Promise<Buffer> {
  if (!parquetSample) {
    const path = join(tmp.dir, 'sample.parquet')
    await writeParquet(
      path,
      { key: 'VARCHAR', value: 'VARCHAR' },
      Array.from({ length: 500 }, (_, i) => ({ key: `k${i}`, value: `v${i}`.repeat(10) })),
      { rowGroupSize: 100, codec: 'uncompressed' },
    )
    parquetSample = readFileSync(path)
  }
  return parquetSample
}
const truncatedParquet = (cut: (size: number) => number) => async (path: string) => {
  const whole = await parquetBytes()
  writeFileSync(path, whole.subarray(0, cut(whole.length)))
}

let arrowSample: { file: Buffer; stream: Buffer } | undefined
function arrowBytes(): { file: Buffer; stream: Buffer } {
  if (!arrowSample) {
    const t = new Table({
      key: vectorFromArray(
        Array.from({ length: 1000 }, (_, i) => `k${i}`),
        new Utf8(),
      ),
      value: vectorFromArray(
        Array.from({ length: 1000 }, (_, i) => `v${i}`.repeat(20)),
        new Utf8(),
      ),
    })
    arrowSample = { file: Buffer.from(tableToIPC(t, 'file')), stream: Buffer.from(tableToIPC(t, 'stream')) }
  }
  return arrowSample
}

const MiB = 1 << 20
const BIG = 100 * MiB
let bigValue: Buffer | undefined
const big = (): Buffer => (bigValue ??= Buffer.alloc(BIG, 'rostore-100MB-value-0123456789;'))
let largeRecords: [string, Buffer][] | undefined
const manyLarge = (): [string, Buffer][] =>
  (largeRecords ??= Array.from({ length: 300 }, (_, i) => [`large-${i}`, Buffer.alloc(100 * 1024 + i, `value ${i} `)]))
const singleByteKeys = Array.from({ length: 128 }, (_, c) => c).filter((c) => c !== 0x09 && c !== 0x0a)
const allBytes = Array.from({ length: 256 }, (_, c) => Buffer.from([c]))
const binaryKeys = [
  Buffer.from([0]),
  Buffer.from([0xff, 0xfe]),
  Buffer.from([0xc3, 0x28]),
  Buffer.from([0, 0, 0]),
  Buffer.from('plain text'),
  Buffer.alloc(300, 0x80),
]

const err = (at: string, reason: RegExp, code: 'RO_BAD_INPUT' | 'RO_DUPLICATE_KEY' = 'RO_BAD_INPUT'): Expect => ({
  error: code,
  at,
  reason,
})
const ok = (
  records: readonly (readonly [Bytes, Bytes])[],
  extra: { keySerializer?: 'string' | 'bytes'; absent?: Bytes[] } = {},
): Expect => ({ records, ...extra })

const CASES: Case[] = [
  // --- TSV ----------------------------------------------------------------------------
  { name: 'tsv: a line without a tab', format: 'tsv', write: lines('a\t1', 'no tab here'), expect: err(':2', /no tab separator/) },
  {
    name: 'tsv: invalid UTF-8 in a value',
    format: 'tsv',
    write: lines('a\t1', 'b\t2', b('c\t', [0xff, 0xfe])),
    expect: err(':3', /invalid UTF-8/),
  },
  {
    name: 'tsv: invalid UTF-8 in a key (overlong encoding)',
    format: 'tsv',
    write: lines(b([0xc0, 0xaf], '\tx')),
    expect: err(':1', /invalid UTF-8/),
  },
  { name: 'tsv: an empty key', format: 'tsv', write: lines('a\t1', '\tvalue'), expect: err(':2', /empty key/) },
  { name: 'tsv: a blank line between records', format: 'tsv', write: lines('a\t1', '', 'b\t2'), expect: err(':2', /empty line/) },
  {
    name: 'tsv: a key of 65,536 bytes',
    format: 'tsv',
    write: lines('a\t1', `${'k'.repeat(65536)}\tv`),
    expect: err(':2', /65536 bytes, longer than the maximum 65535/),
  },
  {
    name: 'tsv: the same key twice',
    format: 'tsv',
    write: lines('x\t1', 'y\t2', 'x\t3'),
    expect: err(':1 and ', /duplicate key "x": .*:1 and .*:3/, 'RO_DUPLICATE_KEY'),
  },
  {
    name: 'tsv: a missing key column (--key-field 3 of 2)',
    format: 'tsv',
    keyField: '3',
    write: lines('a\t1'),
    expect: err(':1', /no column 3 for the key/),
  },
  {
    name: 'tsv: a key of exactly 65,535 bytes',
    format: 'tsv',
    write: lines('a\t1', `${'k'.repeat(65535)}\tv`),
    expect: ok([
      ['a', '1'],
      ['k'.repeat(65535), 'v'],
    ]),
  },
  {
    name: 'tsv: NUL bytes in keys and values',
    format: 'tsv',
    write: lines(b('a', [0], 'b\tx', [0], 'y'), b([0], '\t', [0, 0]), 'ab\tz'),
    expect: ok([
      [b('a', [0], 'b'), b('x', [0], 'y')],
      [b([0]), b([0, 0])],
      ['ab', 'z'],
    ]),
  },
  {
    name: 'tsv: every 1-byte key (all ASCII but TAB and LF)',
    format: 'tsv',
    write: lines(...singleByteKeys.map((c) => b([c], `\tv${c}`))),
    expect: ok(
      singleByteKeys.map((c) => [Buffer.from([c]), `v${c}`] as const),
      { absent: ['\t', 'vv'] },
    ),
  },
  {
    name: 'tsv: CRLF line ends and a byte order mark',
    format: 'tsv',
    write: file(b([0xef, 0xbb, 0xbf], 'a\t1\r\nb\t2 \r\n\r\n')),
    expect: ok(
      [
        ['a', '1'],
        ['b', '2 '],
      ],
      { absent: [b([0xef, 0xbb, 0xbf], 'a'), 'b\r'] },
    ),
  },
  { name: 'tsv: an empty file', format: 'tsv', write: file(''), expect: ok([]) },
  {
    name: 'tsv: a 100 MB value (fits the default 1 GiB budget)',
    format: 'tsv',
    memoryMb: 1024,
    write: (p) => writeFileSync(p, b('small\t1\nbig\t', big(), '\nlast\t2\n')),
    expect: ok([
      ['small', '1'],
      ['big', big()],
      ['last', '2'],
    ]),
  },
  {
    name: 'tsv: a 100 MB value larger than the whole sort buffer (--memory-mb 16)',
    format: 'tsv',
    memoryMb: 16,
    write: (p) => writeFileSync(p, b('big\t', big(), '\nsmall\t1\n')),
    expect: ok([
      ['big', big()],
      ['small', '1'],
    ]),
  },
  {
    name: 'tsv: 300 values of 100 KiB spilled to many sorted runs (--memory-mb 4)',
    format: 'tsv',
    memoryMb: 4,
    write: (p) => writeFileSync(p, b(...manyLarge().map(([k, v]) => b(k, '\t', v, '\n')))),
    expect: ok(manyLarge()),
  },
  {
    name: 'tsv via the CLI: invalid UTF-8',
    format: 'tsv',
    cli: true,
    write: lines('a\t1', b('b\t', [0xed, 0xa0, 0x80])),
    expect: err(':2', /invalid UTF-8/),
  },

  // --- CSV ----------------------------------------------------------------------------
  {
    name: 'csv: an unterminated quoted field',
    format: 'csv',
    write: lines('key,value', 'a,1', 'b,"never closed', 'c,3'),
    expect: err(':3', /unterminated quoted field/),
  },
  { name: 'csv: a stray quote in an unquoted field', format: 'csv', write: lines('key,value', 'a"b,1'), expect: err(':2', /stray quote/) },
  {
    name: 'csv: text after a closing quote',
    format: 'csv',
    write: lines('key,value', '"a"b,1'),
    expect: err(':2', /after a closing quote/),
  },
  {
    name: 'csv: a bare carriage return',
    format: 'csv',
    write: file('key,value\na,1\rb,2\n'),
    expect: err(':2', /carriage return not followed by a line feed/),
  },
  {
    name: 'csv: a row with too many fields',
    format: 'csv',
    write: lines('key,value', 'a,1', 'b,2,3'),
    expect: err(':3', /expected 2 fields \(key, value\), got 3/),
  },
  {
    name: 'csv: wrong column names',
    format: 'csv',
    write: lines('id,val', 'a,1'),
    expect: err(':1', /no column 'key' in header; columns are: id, val/),
  },
  { name: 'csv: a duplicate header column', format: 'csv', write: lines('key,key', 'a,1'), expect: err(':1', /duplicate column 'key'/) },
  {
    name: 'csv: invalid UTF-8 in a value',
    format: 'csv',
    write: lines('key,value', b('a,', [0x80])),
    expect: err(':2', /invalid UTF-8 in column 'value'/),
  },
  {
    name: 'csv: quoted fields with commas, doubled quotes, newlines and NUL',
    format: 'csv',
    write: file(b('key,value\r\n"a,b","x""y"\r\n"multi\nline","1\r\n2"\r\n', 'n', [0], 'ul,', [0], '\r\n')),
    expect: ok([
      ['a,b', 'x"y'],
      ['multi\nline', '1\r\n2'],
      [b('n', [0], 'ul'), b([0])],
    ]),
  },
  {
    name: 'csv: a byte order mark and CRLF',
    format: 'csv',
    write: file(b([0xef, 0xbb, 0xbf], 'key,value\r\na,1\r\nb,\r\n')),
    expect: ok([
      ['a', '1'],
      ['b', ''],
    ]),
  },
  { name: 'csv: an empty file', format: 'csv', write: file(''), expect: ok([]) },
  { name: 'csv: a header only', format: 'csv', write: lines('key,value'), expect: ok([]) },
  {
    name: 'csv via the CLI: quoting, CRLF (a correct store)',
    format: 'csv',
    cli: true,
    write: file('key,value\r\n"k,1","v ""1"""\r\nk2,\r\n'),
    expect: ok([
      ['k,1', 'v "1"'],
      ['k2', ''],
    ]),
  },

  // --- JSON lines -----------------------------------------------------------------------
  {
    name: 'jsonl: invalid JSON',
    format: 'jsonl',
    write: lines('{"key":"a","value":1}', '{"key": nope}'),
    expect: err(':2', /invalid JSON/),
  },
  {
    name: 'jsonl: text after the object',
    format: 'jsonl',
    write: lines('{"key":"a","value":1} {"key":"b"}'),
    expect: err(':1', /invalid JSON/),
  },
  {
    name: 'jsonl: an array, not an object',
    format: 'jsonl',
    write: lines('{"key":"a","value":1}', '["a",1]'),
    expect: err(':2', /expected a JSON object, got an array/),
  },
  { name: 'jsonl: a bare number', format: 'jsonl', write: lines('42'), expect: err(':1', /expected a JSON object, got a number/) },
  { name: 'jsonl: null', format: 'jsonl', write: lines('{"key":"a"}', 'null'), expect: err(':2', /expected a JSON object, got null/) },
  { name: 'jsonl: wrong field names', format: 'jsonl', write: lines('{"id":"a","value":1}'), expect: err(':1', /missing key field 'key'/) },
  {
    name: 'jsonl: --value-field naming an absent field',
    format: 'jsonl',
    valueField: 'payload',
    write: lines('{"key":"a","value":1}'),
    expect: err(':1', /missing value field 'payload'/),
  },
  {
    name: 'jsonl: an object as key',
    format: 'jsonl',
    write: lines('{"key":{"a":1},"value":1}'),
    expect: err(':1', /must be a string, a number or bytes, not an object/),
  },
  { name: 'jsonl: a null key', format: 'jsonl', write: lines('{"key":null,"value":1}'), expect: err(':1', /key field 'key' is null/) },
  {
    name: 'jsonl: an integer key beyond 2^53',
    format: 'jsonl',
    write: lines('{"key":9007199254740993,"value":1}'),
    expect: err(':1', /too large to be exact/),
  },
  {
    name: 'jsonl: invalid UTF-8',
    format: 'jsonl',
    write: lines('{"key":"a"}', b('{"key":"', [0xf8, 0x88, 0x80, 0x80, 0x80], '"}')),
    expect: err(':2', /invalid UTF-8/),
  },
  {
    name: 'jsonl: a value nested 100,000 deep',
    format: 'jsonl',
    write: lines('{"key":"a","value":1}', `{"key":"deep","value":${'['.repeat(100_000)}${']'.repeat(100_000)}}`),
    expect: err(':2', /nested too deeply/),
  },
  {
    name: 'jsonl: a whitespace-only line between records',
    format: 'jsonl',
    write: lines('{"key":"a"}', ' \t ', '{"key":"b"}'),
    expect: err(':2', /empty line/),
  },
  {
    name: 'jsonl: \\u0000 in keys and values, a 1-byte key, a 100-deep value',
    format: 'jsonl',
    write: lines(
      '{"key":"a\\u0000b","value":"x\\u0000"}',
      '{"key":"z","value":"1"}',
      `{"key":"deep","value":${'['.repeat(100)}${']'.repeat(100)}}`,
    ),
    expect: ok([
      [b('a', [0], 'b'), b('x', [0])],
      ['z', '1'],
      ['deep', `${'['.repeat(100)}${']'.repeat(100)}`],
    ]),
  },
  {
    name: 'jsonl: a lone surrogate in a key is stored as U+FFFD, as every client encodes it',
    format: 'jsonl',
    write: lines('{"key":"s\\ud800","value":"1"}'),
    expect: ok([
      ['s\ud800', '1'],
      [b('s', [0xef, 0xbf, 0xbd]), '1'],
    ]),
  },
  {
    name: 'jsonl: BOM, CRLF and trailing blank lines',
    format: 'jsonl',
    write: file(b([0xef, 0xbb, 0xbf], '{"key":"a","value":"1"}\r\n{"key":"b","value":{"x":[1]}}\r\n\r\n')),
    expect: ok([
      ['a', '1'],
      ['b', '{"x":[1]}'],
    ]),
  },
  { name: 'jsonl: an empty file', format: 'jsonl', write: file(''), expect: ok([]) },

  // --- Parquet --------------------------------------------------------------------------
  ...[
    ['1 byte', () => 1],
    ['4 bytes', () => 4],
    ['100 bytes', () => 100],
    ['half', (n: number) => Math.floor(n / 2)],
    ['all but 8 bytes', (n: number) => n - 8],
    ['all but 1 byte', (n: number) => n - 1],
  ].map(([label, cut]): Case => ({
    name: `parquet: truncated to ${label as string}`,
    format: 'parquet',
    write: truncatedParquet(cut as (n: number) => number),
    expect: err('', /not a readable Parquet file/),
  })),
  {
    name: 'parquet: a garbled data page (footer intact)',
    format: 'parquet',
    write: async (p) => {
      const g = Buffer.from(await parquetBytes())
      g.fill(0x41, 200, 260)
      writeFileSync(p, g)
    },
    expect: err(': row 0', /cannot read Parquet data/),
  },
  {
    name: 'parquet: a text file, not Parquet',
    format: 'parquet',
    write: lines('key,value', 'a,1'),
    expect: err('', /not a readable Parquet file/),
  },
  {
    name: 'parquet: wrong column names',
    format: 'parquet',
    write: (p) => writeParquet(p, { id: 'VARCHAR', body: 'VARCHAR' }, [{ id: 'a', body: 'b' }]).then(() => undefined),
    expect: err('', /no column 'key'; columns are: id, body/),
  },
  {
    name: 'parquet: a null key in row 2',
    format: 'parquet',
    write: (p) =>
      writeParquet(p, { key: 'VARCHAR', value: 'VARCHAR' }, [{ key: 'a', value: '1' }, { key: 'b', value: '2' }, { value: '3' }]).then(
        () => undefined,
      ),
    expect: err(': row 2', /key column 'key' is null/),
  },
  {
    name: 'parquet: binary keys and values (every 1-byte key, invalid UTF-8, NUL)',
    format: 'parquet',
    write: (p) =>
      writeParquet(
        p,
        { key: 'BLOB', value: 'BLOB' },
        [...allBytes, ...binaryKeys.slice(2)].map((k, i) => ({ key: k, value: Buffer.from([i & 0xff, 0, 0xff]) })),
      ).then(() => undefined),
    expect: ok(
      [...allBytes, ...binaryKeys.slice(2)].map((k, i) => [k, Buffer.from([i & 0xff, 0, 0xff])] as const),
      { keySerializer: 'bytes', absent: [Buffer.alloc(0), Buffer.from([0, 1])] },
    ),
  },
  { name: 'parquet: an empty file', format: 'parquet', write: file(''), expect: ok([]) },
  {
    name: 'parquet: a column of a type rostore does not read (INTERVAL), in the whole row',
    format: 'parquet',
    write: (p) => writeParquetWithDuckdb(p, `SELECT 'a' AS key, INTERVAL 1 DAY AS span`).then(() => undefined),
    expect: err('', /column 'span' has type INTERVAL, which rostore does not read/),
  },
  {
    name: 'parquet: a BOOLEAN key column',
    format: 'parquet',
    write: (p) => writeParquetWithDuckdb(p, `SELECT true AS key, 'x' AS value`).then(() => undefined),
    expect: err('', /key column 'key' is of type BOOLEAN; a key must be text, a number or bytes/),
  },
  {
    name: 'parquet: NULL text values are stored empty, ZSTD with v2 encodings',
    format: 'parquet',
    write: (p) =>
      writeParquetWithDuckdb(p, `SELECT * FROM (VALUES ('a', NULL), ('b', 'x')) t(key, value)`, { codec: 'zstd', version: 'v2' }).then(
        () => undefined,
      ),
    expect: ok([
      ['a', ''],
      ['b', 'x'],
    ]),
  },
  {
    name: 'parquet via the CLI: truncated',
    format: 'parquet',
    cli: true,
    write: truncatedParquet((n) => n - 100),
    expect: err('', /not a readable Parquet file/),
  },

  // --- Arrow ----------------------------------------------------------------------------
  {
    name: 'arrow file: cut inside the footer',
    format: 'arrow',
    write: (p) => writeFileSync(p, arrowBytes().file.subarray(0, arrowBytes().file.length - 10)),
    expect: err('', /truncated Arrow IPC file/),
  },
  {
    name: 'arrow file: cut to half',
    format: 'arrow',
    write: (p) => writeFileSync(p, arrowBytes().file.subarray(0, arrowBytes().file.length >> 1)),
    expect: err('', /truncated Arrow IPC file/),
  },
  {
    name: 'arrow file: cut to 4 bytes',
    format: 'arrow',
    write: (p) => writeFileSync(p, arrowBytes().file.subarray(0, 4)),
    expect: err('', /not a readable Arrow IPC file/),
  },
  {
    name: 'arrow stream: cut to 8 bytes',
    format: 'arrow',
    write: (p) => writeFileSync(p, arrowBytes().stream.subarray(0, 8)),
    expect: err('', /not a readable Arrow IPC file/),
  },
  {
    name: 'arrow stream: cut inside a record batch',
    format: 'arrow',
    write: (p) => writeFileSync(p, arrowBytes().stream.subarray(0, arrowBytes().stream.length >> 1)),
    expect: err(': row 0', /cannot read Arrow data/),
  },
  {
    name: 'arrow stream: cut between two record batches',
    format: 'arrow',
    write: async (p) => {
      const { bytes, messages } = await threeBatchStream()
      writeFileSync(p, bytes.subarray(0, messages[3]))
    },
    expect: err(': row 20', /truncated Arrow IPC stream/),
  },
  {
    name: 'arrow stream: only the end-of-stream marker missing',
    format: 'arrow',
    write: (p) => writeFileSync(p, arrowBytes().stream.subarray(0, arrowBytes().stream.length - 8)),
    expect: err(': row 1000', /end-of-stream marker/),
  },
  {
    name: 'arrow: garbage bytes',
    format: 'arrow',
    write: lines('this is not an Arrow file at all'),
    expect: err('', /not a readable Arrow IPC file/),
  },
  {
    name: 'arrow: wrong column names',
    format: 'arrow',
    write: (p) => arrow(p, { id: ['a'], body: ['b'] }, 'file'),
    expect: err('', /no column 'key'; columns are: id, body/),
  },
  {
    name: 'arrow: a null key in row 1',
    format: 'arrow',
    write: (p) => arrow(p, { key: ['a', null], value: ['1', '2'] }, 'stream'),
    expect: err(': row 1', /key column 'key' is null/),
  },
  {
    name: 'arrow: binary keys (every 1-byte key, invalid UTF-8, NUL)',
    format: 'arrow',
    write: (p) =>
      arrow(
        p,
        { key: [...allBytes, ...binaryKeys.slice(1)], value: [...allBytes, ...binaryKeys.slice(1)].map((_, i) => `v${i}\u0000`) },
        'file',
        true,
      ),
    expect: ok(
      [...allBytes, ...binaryKeys.slice(1)].map((k, i) => [k, `v${i}\u0000`] as const),
      { keySerializer: 'bytes' },
    ),
  },
  { name: 'arrow: an empty file', format: 'arrow', write: file(''), expect: ok([]) },
  {
    name: 'arrow via the CLI: stream cut between batches',
    format: 'arrow',
    cli: true,
    write: async (p) => {
      const { bytes, messages } = await threeBatchStream()
      writeFileSync(p, bytes.subarray(0, messages[2]))
    },
    expect: err(': row 10', /truncated Arrow IPC stream/),
  },
]

// ---------------------------------------------------------------------------------------

const EXT: Record<InputFormat, string> = { tsv: 'tsv', csv: 'csv', jsonl: 'jsonl', parquet: 'parquet', arrow: 'arrow' }
const tally = { cases: 0, refused: 0, built: 0, viaCli: 0, crashes: 0, byFormat: {} as Record<string, number> }

function buf(x: Bytes): Buffer {
  return typeof x === 'string' ? Buffer.from(x, 'utf8') : x
}

function show(x: Bytes): string {
  const v = buf(x)
  return v.length > 60 ? `${v.subarray(0, 60).toString('hex')}… (${v.length} bytes)` : v.toString('hex')
}

interface Outcome {
  readonly error?: { readonly code: string; readonly message: string; readonly storeError: boolean }
}

async function runBuild(c: Case, input: string, out: string, runs: string): Promise<Outcome> {
  if (c.cli) {
    const clusterFile = join(runs, '..', 'cluster.json')
    writeFileSync(clusterFile, JSON.stringify({ name: 'bad-input', nodes: [{ id: 0, host: '127.0.0.1', port: 7000, partitions: [0, 1] }] }))
    const args = [
      'build',
      '--input',
      input,
      '--format',
      c.format,
      '--cluster',
      clusterFile,
      '--store',
      'bad',
      '--output',
      out,
      '--version',
      '1',
      '--chunks',
      '2',
      '--workers',
      '1',
      '--tmpdir',
      runs,
      '--memory-mb',
      String(c.memoryMb ?? 64),
    ]
    const r = spawnSync(process.execPath, [cliPath(), ...args], { encoding: 'utf8', timeout: 120_000 })
    if (r.status === 0) return {}
    // The CLI prints "rostore: <message> [<code>]" and exits 1; anything else is a crash.
    const m = /^rostore: ([\s\S]*) \[(RO_[A-Z_]+)\]\s*$/m.exec(r.stderr)
    if (r.status !== 1 || !m)
      return { error: { code: `exit ${r.status ?? r.signal}`, message: r.stderr.slice(0, 2000), storeError: false } }
    return { error: { code: m[2] as string, message: m[1] as string, storeError: true } }
  }
  try {
    await buildStore({
      inputs: [input],
      format: c.format,
      cluster,
      store: 'bad',
      output: out,
      version: 1,
      chunks: 2,
      workers: 1,
      tmpdir: runs,
      memoryMb: c.memoryMb ?? 64,
      keyField: c.keyField,
      valueField: c.valueField,
    })
    return {}
  } catch (e) {
    return {
      error: {
        code: isStoreError(e) ? e.code : ((e as Error)?.name ?? 'thrown'),
        message: (e as Error)?.message ?? String(e),
        storeError: isStoreError(e),
      },
    }
  }
}

afterAll(() => {
  tmp.cleanup()
  reportFigures(
    'bad-input',
    `bad-input: ${tally.cases} cases (${Object.entries(tally.byFormat)
      .map(([f, n]) => `${f} ${n}`)
      .join(
        ', ',
      )}; ${tally.viaCli} through the CLI), ${tally.refused} refused with a clear error, ${tally.built} built correct stores, ${tally.crashes} crashes`,
    { ...tally },
  )
})

test('the corpus covers every format with at least 30 cases', () => {
  expect(CASES.length).toBeGreaterThanOrEqual(30)
  for (const f of Object.keys(EXT)) expect(CASES.filter((c) => c.format === f).length).toBeGreaterThanOrEqual(5)
  expect(new Set(CASES.map((c) => c.name)).size).toBe(CASES.length)
})

test.each(CASES.map((c, i) => [c.name, i] as const))('%s', async (_name, i) => {
  const c = CASES[i]!
  const dir = join(tmp.dir, `case-${i}`)
  const runs = join(dir, 'runs')
  mkdirSync(runs, { recursive: true })
  const input = join(dir, `input.${EXT[c.format]}`)
  await c.write(input)
  const out = join(dir, 'out')
  tally.cases++
  tally.byFormat[c.format] = (tally.byFormat[c.format] ?? 0) + 1
  if (c.cli) tally.viaCli++

  const outcome = await runBuild(c, input, out, runs)
  // Nothing half-written: no spilled runs, no hidden temp output next to `out`.
  expect(readdirSync(runs)).toEqual([])
  expect(readdirSync(dir).filter((n) => n.includes('rostore-tmp'))).toEqual([])

  if ('error' in c.expect) {
    if (!outcome.error) throw new Error(`expected ${c.expect.error}, but the build succeeded`)
    if (!outcome.error.storeError) tally.crashes++
    expect({ storeError: outcome.error.storeError, code: outcome.error.code }).toEqual({ storeError: true, code: c.expect.error })
    // The message starts with the file and the line or row, then the reason.
    const where = `${input}${c.expect.at}`
    if (c.expect.error === 'RO_DUPLICATE_KEY') expect(outcome.error.message).toContain(where)
    else expect(outcome.error.message.startsWith(`${where}: `)).toBe(true)
    expect(outcome.error.message).toMatch(c.expect.reason)
    expect(existsSync(out)).toBe(false)
    tally.refused++
    return
  }

  if (outcome.error) {
    if (!outcome.error.storeError) tally.crashes++
    throw new Error(`expected a store, the build failed: ${outcome.error.code}: ${outcome.error.message.slice(0, 500)}`)
  }
  // A format-2 build output opens whole: every partition.
  const report = await verifyStore(out)
  if (c.cli) {
    const v = spawnSync(process.execPath, [cliPath(), 'verify', out], { encoding: 'utf8', timeout: 60_000 })
    expect({ status: v.status, stderr: v.stderr }).toEqual({ status: 0, stderr: '' })
  }
  const expected = new Map<string, Buffer>()
  for (const [k, v] of c.expect.records) expected.set(buf(k).toString('hex'), buf(v))
  expect(report.records).toBe(expected.size)
  const reader = await openStore(out)
  try {
    if (c.expect.keySerializer) expect(reader.metadata.keySerializer).toBe(c.expect.keySerializer)
    const wrong: string[] = []
    for (const [k, v] of c.expect.records) {
      const got = reader.get(buf(k))
      if (got === undefined || !got.equals(buf(v)))
        wrong.push(`${show(k)}: ${got === undefined ? 'absent' : show(got)}, expected ${show(v)}`)
    }
    for (const k of c.expect.absent ?? [])
      if (!expected.has(buf(k).toString('hex')) && reader.get(buf(k)) !== undefined) wrong.push(`${show(k)} should be absent`)
    expect(wrong.slice(0, 5)).toEqual([])
  } finally {
    reader.close()
  }
  tally.built++
})
