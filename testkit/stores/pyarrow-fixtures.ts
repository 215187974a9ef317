/**
 * Parquet and Arrow IPC written by pyarrow (Arrow C++, an implementation independent of
 * apache-arrow JS and of DuckDB), from the rows of parquet-fixtures.ts: Parquet with data
 * pages v2, Arrow IPC files and streams with dictionary-encoded and large string/binary
 * columns. pyarrow comes from the project's .venv (testkit/peers/python.ts).
 */
import { rmSync, writeFileSync } from 'node:fs'
import type { TrickyRow } from './parquet-fixtures'
import { ensurePython, runPython } from '../peers/python'

export type PyarrowOutput =
  | {
      readonly kind: 'parquet'
      /** pyarrow codec names: snappy, gzip, brotli, zstd, lz4 (written as LZ4_RAW), none. */
      readonly codec: string
      readonly dataPageVersion: '1.0' | '2.0'
      readonly rowGroupSize?: number
      /** Per-column encodings instead of dictionary ones (e.g. {"value": "DELTA_BYTE_ARRAY"}). */
      readonly columnEncoding?: Readonly<Record<string, string>>
    }
  | {
      readonly kind: 'arrow-file' | 'arrow-stream'
      /** Strings as dictionary<int32, utf8> (key excepted: dictionaries are for repeated values). */
      readonly dictionary?: boolean
      /** large_string / large_binary (64-bit offsets) instead of string / binary. */
      readonly large?: boolean
      readonly batchRows?: number
      /** IPC body compression: lz4 or zstd. */
      readonly compression?: 'lz4' | 'zstd'
    }

const SCRIPT = String.raw`
import json, sys
import pyarrow as pa
rows_path, out, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
cols = {'key': [], 'value': [], 'color': [], 'bin': [], 'n': []}
with open(rows_path, encoding='utf-8') as f:
    for line in f:
        r = json.loads(line)
        cols['key'].append(r['key']); cols['value'].append(r['value']); cols['color'].append(r['color'])
        cols['bin'].append(None if r['bin'] is None else bytes.fromhex(r['bin'])); cols['n'].append(int(r['n']))
large = spec.get('large', False)
text = pa.large_string() if large else pa.string()
binary = pa.large_binary() if large else pa.binary()
def strings(name):
    arr = pa.array(cols[name], type=text)
    return arr.dictionary_encode() if spec.get('dictionary') and name != 'key' else arr
table = pa.table({'key': strings('key'), 'value': strings('value'), 'color': strings('color'),
                  'bin': pa.array(cols['bin'], type=binary), 'n': pa.array(cols['n'], type=pa.int64())})
if spec['kind'] == 'parquet':
    import pyarrow.parquet as pq
    enc = spec.get('columnEncoding')
    pq.write_table(table, out, compression=spec['codec'], data_page_version=spec['dataPageVersion'],
                   row_group_size=spec.get('rowGroupSize'), use_dictionary=False if enc else True,
                   column_encoding=enc, data_page_size=64 * 1024)
else:
    import pyarrow.ipc as ipc
    options = ipc.IpcWriteOptions(compression=spec.get('compression'))
    open_writer = ipc.new_file if spec['kind'] == 'arrow-file' else ipc.new_stream
    with open_writer(out, table.schema, options=options) as w:
        w.write_table(table, max_chunksize=spec.get('batchRows') or 1000)
`

/** Writes `rows` to `out` with pyarrow as `spec` says. */
export function writeWithPyarrow(out: string, rows: readonly TrickyRow[], spec: PyarrowOutput): string {
  const python = ensurePython(['pyarrow'])
  const json = `${out}.input.jsonl`
  writeFileSync(
    json,
    rows
      .map(
        (r) => JSON.stringify({ key: r.key, value: r.value, color: r.color, bin: r.bin?.toString('hex') ?? null, n: String(r.n) }) + '\n',
      )
      .join(''),
  )
  try {
    runPython(python, SCRIPT, [json, out, JSON.stringify(spec)])
  } finally {
    rmSync(json, { force: true })
  }
  return out
}
