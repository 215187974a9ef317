import { isUtf8 } from 'node:buffer'
import { StoreError } from '../../common/errors'
import type { RecordSink } from './dump'
import type { OutputColumns } from './dump-columns'

/**
 * Parquet output through hyparquet-writer (the writer companion of hyparquet, which the
 * Parquet input reader already uses; pure JavaScript, one dependency: hyparquet). Columns
 * `key` and `value`, REQUIRED, BYTE_ARRAY: annotated UTF8 for text (the store's serializer
 * says text), plain for bytes, so `rostore build` reads back the exact bytes.
 * Row groups are written as they fill (bounded memory).
 */
interface SchemaElement {
  name: string
  type?: 'BYTE_ARRAY'
  converted_type?: 'UTF8'
  repetition_type?: 'REQUIRED'
  num_children?: number
}
interface ParquetWriterLike {
  write(opts: { columnData: { name: string; data: Uint8Array[] }[]; rowGroupSize?: number }): void | Promise<void>
  finish(): void | Promise<void>
}
interface HyparquetWriter {
  ParquetWriter: new (opts: {
    writer: unknown
    schema: SchemaElement[]
    statistics?: boolean
    createdBy?: string
    kvMetadata?: { key: string; value: string }[]
  }) => ParquetWriterLike
  fileWriter(filename: string): unknown
}

// ES module only: Node >= 20.19 require()s it (Jest compiles it, see jest.config.js).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const hw = require('hyparquet-writer') as HyparquetWriter

const GROUP_ROWS = 65_536
const GROUP_BYTES = 64 << 20

export function parquetSink(
  path: string,
  cols: OutputColumns,
): Promise<{ write: RecordSink['write']; finish(): Promise<void>; destroy(): void }> {
  const column = (name: string, binary: boolean): SchemaElement => ({
    name,
    type: 'BYTE_ARRAY',
    repetition_type: 'REQUIRED',
    ...(binary ? {} : { converted_type: 'UTF8' as const }),
  })
  const fields = [column('key', cols.keyBinary), ...(cols.keysOnly ? [] : [column('value', cols.valueBinary)])]
  const schema: SchemaElement[] = [{ name: 'root', num_children: fields.length }, ...fields]
  let writer: ParquetWriterLike
  try {
    const kvMetadata = Object.entries(cols.fileMetadata ?? {}).map(([key, value]) => ({ key, value }))
    writer = new hw.ParquetWriter({
      writer: hw.fileWriter(path),
      schema,
      statistics: false,
      createdBy: 'rostore dump',
      ...(kvMetadata.length > 0 ? { kvMetadata } : {}),
    })
  } catch (err) {
    throw new StoreError('RO_IO', `${path}: ${(err as Error).message}`, { cause: err })
  }
  let keys: Uint8Array[] = []
  let values: Uint8Array[] = []
  let bytes = 0
  let n = 0
  const flush = async (): Promise<void> => {
    if (keys.length === 0) return
    const columnData = [{ name: 'key', data: keys }, ...(cols.keysOnly ? [] : [{ name: 'value', data: values }])]
    await writer.write({ columnData, rowGroupSize: keys.length })
    keys = []
    values = []
    bytes = 0
  }
  return Promise.resolve({
    write: async (key: Buffer, value: Buffer | undefined) => {
      n++
      if (!cols.keyBinary && !isUtf8(key)) throw notText(n, 'key')
      keys.push(Uint8Array.prototype.slice.call(key))
      bytes += key.length
      if (!cols.keysOnly) {
        const v = value ?? Buffer.alloc(0)
        if (!cols.valueBinary && !isUtf8(v)) throw notText(n, 'value')
        values.push(Uint8Array.prototype.slice.call(v))
        bytes += v.length
      }
      if (keys.length >= GROUP_ROWS || bytes >= GROUP_BYTES) await flush()
    },
    finish: async () => {
      await flush()
      await writer.finish()
    },
    destroy: () => undefined,
  })
}

function notText(n: number, what: string): StoreError {
  return new StoreError('RO_CORRUPT', `record ${n}: the store says its ${what}s are text, but this one is not UTF-8`)
}
