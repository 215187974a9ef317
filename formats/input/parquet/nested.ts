/**
 * Nested columns (structs, lists, maps) as values: hyparquet assembles one row group of
 * the column into JavaScript values, written as JSON. Memory is that column's row group,
 * decoded. Leaf values follow the flat columns' rules where hyparquet lets us choose
 * (timestamps, dates, UUIDs as text, binary as base64, INT64 with every digit); decimals
 * inside nested values come out as JSON numbers rounded to a double (hyparquet's rule).
 */
import type { InputHandle } from '../input-file'
import { toJsonText } from '../row-value'
import { dateText, timestampText, uuidText } from '../typed-text'
import { decompress, type Codec } from './codecs'
import type { ColumnType } from './column-type'
import { parquetRead, type FileMetaData } from './hyparquet'

const decoder = new TextDecoder()

const PARSERS = {
  timestampFromMilliseconds: (v: bigint) => timestampText(BigInt(v), 'ms', true),
  timestampFromMicroseconds: (v: bigint) => timestampText(BigInt(v), 'us', true),
  timestampFromNanoseconds: (v: bigint) => timestampText(BigInt(v), 'ns', true),
  dateFromDays: (days: number) => dateText(days),
  stringFromBytes: (bytes: Uint8Array | undefined) => bytes && decoder.decode(bytes),
  jsonFromBytes: (bytes: Uint8Array | undefined): unknown => bytes && (JSON.parse(decoder.decode(bytes)) as unknown),
  uuidFromBytes: (bytes: Uint8Array | undefined) => bytes && uuidText(bytes),
  geometryFromBytes: (bytes: Uint8Array) => bytes,
  geographyFromBytes: (bytes: Uint8Array) => bytes,
}

const COMPRESSORS = Object.fromEntries(
  (['SNAPPY', 'GZIP', 'ZSTD', 'LZ4_RAW', 'LZ4', 'BROTLI'] as const).map((codec: Codec) => [
    codec,
    (input: Uint8Array, size: number) => decompress(codec, input, size),
  ]),
)

export const NESTED_TYPE: ColumnType = {
  describe: 'nested (struct, list or map)',
  valueKind: 'json',
  keyKind: undefined,
  key: () => {
    throw new TypeError('nested columns are not keys')
  },
  value: (raw) => Buffer.from(toJsonText(raw), 'utf8'),
  json: (raw) => toJsonText(raw),
}

/** One nested top-level column of one row group, with the ColumnCursor's interface. */
export class NestedColumn {
  rowStart = 0
  available = 0
  private values: ArrayLike<unknown> = []
  private loaded = false

  constructor(
    private readonly handle: InputHandle,
    private readonly size: number,
    private readonly metadata: FileMetaData,
    private readonly name: string,
    private readonly groupStart: number,
    private readonly groupRows: number,
  ) {}

  isNull(row: number): boolean {
    return this.values[row] === null || this.values[row] === undefined
  }

  raw(row: number): unknown {
    return this.values[row]
  }

  async advance(): Promise<boolean> {
    if (this.loaded) return false
    this.loaded = true
    const handle = this.handle
    const file = {
      byteLength: this.size,
      slice: async (start: number, end?: number): Promise<ArrayBuffer> => {
        const buf = Buffer.allocUnsafeSlow((end ?? this.size) - start)
        await handle.read(buf, 0, buf.length, start)
        return buf.buffer as ArrayBuffer
      },
    }
    const chunks: Array<{ rowStart: number; data: ArrayLike<unknown> }> = []
    await parquetRead({
      file,
      metadata: this.metadata,
      columns: [this.name],
      rowStart: this.groupStart,
      rowEnd: this.groupStart + this.groupRows,
      utf8: false,
      parsers: PARSERS,
      compressors: COMPRESSORS,
      onChunk: (chunk) => chunks.push({ rowStart: chunk.rowStart, data: chunk.columnData }),
    })
    const values = new Array<unknown>(this.groupRows).fill(null)
    for (const { rowStart, data } of chunks) {
      for (let i = 0; i < data.length; i++) {
        const row = rowStart - this.groupStart + i
        if (row >= 0 && row < this.groupRows) values[row] = data[i]
      }
    }
    this.values = values
    this.available = this.groupRows
    return true
  }
}
