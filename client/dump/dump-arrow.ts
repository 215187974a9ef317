import { isUtf8 } from 'node:buffer'
import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { Binary, Field, makeData, RecordBatch, RecordBatchFileWriter, Schema, Struct, Utf8, type DataType } from 'apache-arrow'
import { StoreError } from '../../common/errors'
import type { RecordSink } from './dump'
import type { OutputColumns } from './dump-columns'

/** Rows per record batch, and bytes: batches stay far below Arrow's 2 GiB offset limit. */
const BATCH_ROWS = 65_536
const BATCH_BYTES = 32 << 20

/** Columns of one batch as they fill: bytes and offsets, no per-row objects. */
class ColumnBuilder {
  private parts: Buffer[] = []
  private offsets: number[] = [0]
  bytes = 0

  push(b: Buffer): void {
    this.parts.push(Buffer.from(b))
    this.bytes += b.length
    this.offsets.push(this.bytes)
  }

  data(type: DataType): ReturnType<typeof makeData> {
    const out = makeData({
      type: type as Binary,
      length: this.offsets.length - 1,
      nullCount: 0,
      valueOffsets: Int32Array.from(this.offsets),
      data: Buffer.concat(this.parts, this.bytes),
    })
    this.parts = []
    this.offsets = [0]
    this.bytes = 0
    return out
  }
}

/**
 * An Arrow IPC file (the file format, read back batch by batch by `rostore build`):
 * columns `key` and `value`, Utf8 for text and Binary for bytes, no nulls.
 */
export async function arrowSink(
  path: string,
  cols: OutputColumns,
): Promise<{ write: RecordSink['write']; finish(): Promise<void>; destroy(): void }> {
  const keyType = cols.keyBinary ? new Binary() : new Utf8()
  const valueType = cols.valueBinary ? new Binary() : new Utf8()
  const fields = [new Field('key', keyType, false), ...(cols.keysOnly ? [] : [new Field('value', valueType, false)])]
  const schema = new Schema(fields, new Map(Object.entries(cols.fileMetadata ?? {})))
  const writer = new RecordBatchFileWriter()
  const out = createWriteStream(path)
  let failed: Error | undefined
  out.on('error', (err) => (failed = err))
  const piped = writer.toNodeStream().pipe(out)
  void piped
  const keys = new ColumnBuilder()
  const values = new ColumnBuilder()
  let rows = 0
  let n = 0
  const flush = async (): Promise<void> => {
    if (failed) throw new StoreError('RO_IO', `${path}: ${failed.message}`, { cause: failed })
    if (rows === 0) return
    const children = [keys.data(keyType), ...(cols.keysOnly ? [] : [values.data(valueType)])]
    const struct = makeData({ type: new Struct(fields), length: rows, nullCount: 0, children })
    writer.write(new RecordBatch(schema, struct))
    rows = 0
    // Let the file stream take what the writer produced before filling the next batch.
    if (out.writableLength > BATCH_BYTES) await once(out, 'drain')
  }
  return {
    write: async (key, value) => {
      n++
      if (!cols.keyBinary && !isUtf8(key)) throw notText(n, 'key')
      keys.push(key)
      if (!cols.keysOnly) {
        const v = value ?? Buffer.alloc(0)
        if (!cols.valueBinary && !isUtf8(v)) throw notText(n, 'value')
        values.push(v)
      }
      rows++
      if (rows >= BATCH_ROWS || keys.bytes + values.bytes >= BATCH_BYTES) await flush()
    },
    finish: async () => {
      await flush()
      // An empty dump still writes the schema: a valid file with no rows.
      if (n === 0) writer.reset(undefined, schema)
      writer.finish()
      await once(out, 'close')
      if (failed) throw new StoreError('RO_IO', `${path}: ${failed.message}`, { cause: failed })
    },
    destroy: () => {
      out.destroy()
    },
  }
}

function notText(n: number, what: string): StoreError {
  return new StoreError('RO_CORRUPT', `record ${n}: the store says its ${what}s are text, but this one is not UTF-8`)
}
