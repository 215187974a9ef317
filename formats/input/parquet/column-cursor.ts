/**
 * One flat (top-level, non-repeated) column of one row group, decoded a page at a time.
 * Rows are counted from the start of the row group; `available` is the end of the
 * decoded page. Data pages v1 and v2, every encoding of the format, every codec of
 * codecs.ts.
 *
 * Byte-array columns in PLAIN or dictionary encoding (nearly all key and value columns
 * that writers produce) take a fast path: values are [start, end) offsets into the page
 * (or the dictionary), and a Buffer is made only for the row asked for. Everything else
 * goes through hyparquet's decoders into one array per page.
 */
import type { ScratchBuffer } from '../../../common/working-memory'
import { decompressAsync, type Codec } from './codecs'
import {
  byteStreamSplit,
  deltaBinaryUnpack,
  deltaByteArray,
  deltaLengthByteArray,
  readPlain,
  readRleBitPackedHybrid,
  type ColumnMetaData,
  type DataReader,
  type PageHeader,
  type SchemaElement,
} from './hyparquet'
import { PageError, type PageReader } from './pages'
import type { RawValue } from './column-type'

/** Byte arrays as offsets into one buffer; starts[i] = -1 marks a null. */
interface Slices {
  readonly buf: Buffer
  readonly starts: Int32Array
  readonly ends: Int32Array
}

/**
 * A decoded PLAIN BYTE_ARRAY page: its values lie in `buf` in row order, each after its
 * 4-byte length (value i ends where value i+1's length begins), so a run of rows is one
 * range of `buf`. Index i is row rowStart + i; starts[i] = -1 marks a null.
 */
export interface PlainRun extends Slices {
  readonly rowStart: number
}

type Dictionary = { readonly slices: Slices } | { readonly values: ArrayLike<unknown> }

const DICTIONARY_ENCODINGS = new Set(['PLAIN_DICTIONARY', 'RLE_DICTIONARY'])

export class ColumnCursor {
  /** First row of the decoded page. */
  rowStart = 0
  /** End of the decoded page: rows [rowStart, available) can be read. */
  available = 0
  private slices: Slices | undefined
  /** The slices are a PLAIN BYTE_ARRAY page's (see PlainRun). */
  private plainPage = false
  private values: ArrayLike<unknown> | undefined
  private dictionary: Dictionary | undefined
  private readonly byteArray: boolean
  private readonly optional: boolean

  /**
   * `pageBuffer`: decompress data pages into it, page after page (the caller copies what it
   * keeps before the cursor advances). Without it every page gets fresh memory, which
   * record readers need: their records hold slices of the page.
   */
  constructor(
    private readonly pages: PageReader,
    private readonly element: SchemaElement,
    private readonly meta: ColumnMetaData,
    private readonly codec: Codec,
    private readonly pageBuffer?: ScratchBuffer,
  ) {
    this.byteArray = meta.type === 'BYTE_ARRAY' || meta.type === 'FIXED_LEN_BYTE_ARRAY'
    this.optional = element.repetition_type !== 'REQUIRED'
  }

  isNull(row: number): boolean {
    const i = row - this.rowStart
    return this.slices !== undefined ? this.slices.starts[i]! < 0 : this.values![i] === null
  }

  /** The value of a row that is not null. */
  raw(row: number): RawValue {
    const i = row - this.rowStart
    const slices = this.slices
    if (slices !== undefined) return slices.buf.subarray(slices.starts[i], slices.ends[i])
    const value = this.values![i] as RawValue | Uint8Array
    return value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : value
  }

  /** The decoded page as a PlainRun, when it is one (undefined for other encodings and types). */
  plainRun(): PlainRun | undefined {
    const slices = this.slices
    if (!this.plainPage || slices === undefined) return undefined
    return { buf: slices.buf, starts: slices.starts, ends: slices.ends, rowStart: this.rowStart }
  }

  /** Decodes the next data page; false when the chunk has no more. */
  async advance(): Promise<boolean> {
    // Let the decoded page go before the next one is read: pages may be ~100 MB (DuckDB).
    this.slices = undefined
    this.values = undefined
    this.plainPage = false
    for (;;) {
      const page = await this.pages.next()
      if (page === undefined) return false
      const { header } = page
      if (header.type === 'DICTIONARY_PAGE') {
        const count = header.dictionary_page_header?.num_values ?? 0
        let bytes = await decompressAsync(this.codec, page.bytes, header.uncompressed_page_size)
        // The dictionary outlives its page; stored bytes are in a window the reader reuses.
        if (bytes === page.bytes && this.pages.reusesWindows) bytes = Buffer.from(bytes)
        this.dictionary = this.byteArray ? { slices: this.plainSlices(bytes, 0, count, undefined) } : { values: this.plain(bytes, count) }
        continue
      }
      if (header.type !== 'DATA_PAGE' && header.type !== 'DATA_PAGE_V2') continue // index pages
      await this.decode(header, page.bytes)
      return true
    }
  }

  private async decode(header: PageHeader, stored: Uint8Array): Promise<void> {
    let rows: number
    let encoding: string
    let defLevels: number[] | undefined
    let data: Uint8Array
    if (header.type === 'DATA_PAGE') {
      const h = header.data_page_header
      if (h === undefined) throw new PageError('data page without its header')
      rows = h.num_values
      encoding = h.encoding
      data = await decompressAsync(this.codec, stored, header.uncompressed_page_size, this.pageBuffer)
      if (this.optional) {
        if (h.definition_level_encoding !== 'RLE') throw new PageError(`definition levels in ${h.definition_level_encoding} encoding`)
        const reader = readerOf(data, 0)
        defLevels = new Array<number>(rows)
        readRleBitPackedHybrid(reader, 1, defLevels)
        data = data.subarray(reader.offset)
      }
    } else {
      const h = header.data_page_header_v2
      if (h === undefined) throw new PageError('data page v2 without its header')
      rows = h.num_rows
      encoding = h.encoding
      const levels = h.repetition_levels_byte_length + h.definition_levels_byte_length
      if (this.optional) {
        defLevels = new Array<number>(rows)
        readRleBitPackedHybrid(readerOf(stored, h.repetition_levels_byte_length), 1, defLevels, h.definition_levels_byte_length)
      }
      data = stored.subarray(levels)
      const size = header.uncompressed_page_size - levels
      if (h.is_compressed !== false && size > 0) data = await decompressAsync(this.codec, data, size, this.pageBuffer)
    }
    let present = rows
    if (defLevels !== undefined) for (const d of defLevels) present -= d === 1 ? 0 : 1
    this.rowStart = this.available
    this.available += rows
    if (this.byteArray && (encoding === 'PLAIN' || DICTIONARY_ENCODINGS.has(encoding))) {
      this.values = undefined
      this.slices = encoding === 'PLAIN' ? this.plainSlices(data, 0, present, defLevels) : this.dictionarySlices(data, present, defLevels)
      this.plainPage = encoding === 'PLAIN' && this.meta.type === 'BYTE_ARRAY'
      return
    }
    this.slices = undefined
    this.values = spread(this.dense(data, encoding, present), defLevels, rows)
  }

  /** PLAIN byte arrays (length-prefixed, or fixed length) as slices, nulls as -1. */
  private plainSlices(data: Uint8Array, at: number, present: number, defLevels: number[] | undefined): Slices {
    const buf = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    const rows = defLevels?.length ?? present
    const starts = new Int32Array(rows)
    const ends = new Int32Array(rows)
    const fixed = this.meta.type === 'FIXED_LEN_BYTE_ARRAY' ? (this.element.type_length ?? 0) : -1
    let pos = at
    for (let i = 0; i < rows; i++) {
      if (defLevels !== undefined && defLevels[i] !== 1) {
        starts[i] = -1
        continue
      }
      let length = fixed
      if (fixed < 0) {
        if (pos + 4 > buf.length) throw new PageError('a byte array runs past the end of its page')
        length = buf.readUInt32LE(pos)
        pos += 4
      }
      if (pos + length > buf.length) throw new PageError('a byte array runs past the end of its page')
      starts[i] = pos
      ends[i] = pos + length
      pos += length
    }
    return { buf, starts, ends }
  }

  private dictionarySlices(data: Uint8Array, present: number, defLevels: number[] | undefined): Slices {
    const dict = this.dictionary
    if (dict === undefined || !('slices' in dict)) throw new PageError('a dictionary-encoded page without a dictionary page')
    const indices = this.indices(data, present)
    const rows = defLevels?.length ?? present
    const starts = new Int32Array(rows)
    const ends = new Int32Array(rows)
    const d = dict.slices
    const size = d.starts.length
    for (let i = 0, k = 0; i < rows; i++) {
      if (defLevels !== undefined && defLevels[i] !== 1) {
        starts[i] = -1
        continue
      }
      const index = indices[k++]!
      if (index >= size) throw new PageError(`dictionary index ${index} past the dictionary's ${size} values`)
      starts[i] = d.starts[index]!
      ends[i] = d.ends[index]!
    }
    return { buf: d.buf, starts, ends }
  }

  private indices(data: Uint8Array, present: number): Int32Array {
    const indices = new Int32Array(present)
    if (present === 0) return indices
    const width = data[0] ?? 0
    if (width > 32) throw new PageError(`dictionary index width ${width}`)
    if (width > 0) readRleBitPackedHybrid(readerOf(data, 1), width, indices, data.length - 1)
    return indices
  }

  private plain(data: Uint8Array, count: number): ArrayLike<unknown> {
    return readPlain(readerOf(data, 0), this.meta.type, count, this.element.type_length)
  }

  /** The page's non-null values, in order. */
  private dense(data: Uint8Array, encoding: string, present: number): ArrayLike<unknown> {
    const type = this.meta.type
    switch (encoding) {
      case 'PLAIN':
        return this.plain(data, present)
      case 'PLAIN_DICTIONARY':
      case 'RLE_DICTIONARY': {
        const dict = this.dictionary
        if (dict === undefined || !('values' in dict)) throw new PageError('a dictionary-encoded page without a dictionary page')
        const indices = this.indices(data, present)
        const out = new Array<unknown>(present)
        for (let i = 0; i < present; i++) {
          if (indices[i]! >= dict.values.length) throw new PageError(`dictionary index ${indices[i]} past the dictionary's end`)
          out[i] = dict.values[indices[i]!]
        }
        return out
      }
      case 'RLE': {
        if (type !== 'BOOLEAN') throw new PageError(`RLE-encoded ${type} values`)
        const bits = new Array<number>(present)
        readRleBitPackedHybrid(readerOf(data, 0), 1, bits)
        return bits.map((b) => b === 1)
      }
      case 'DELTA_BINARY_PACKED': {
        if (type !== 'INT32' && type !== 'INT64') throw new PageError(`DELTA_BINARY_PACKED ${type} values`)
        const out = type === 'INT32' ? new Int32Array(present) : new BigInt64Array(present)
        deltaBinaryUnpack(readerOf(data, 0), present, out)
        return out
      }
      case 'DELTA_LENGTH_BYTE_ARRAY':
      case 'DELTA_BYTE_ARRAY': {
        const out = new Array<Uint8Array>(present)
        ;(encoding === 'DELTA_BYTE_ARRAY' ? deltaByteArray : deltaLengthByteArray)(readerOf(data, 0), present, out)
        return out
      }
      case 'BYTE_STREAM_SPLIT':
        return byteStreamSplit(readerOf(data, 0), present, type, this.element.type_length)
      default:
        throw new PageError(`values in ${encoding} encoding, which rostore does not read`)
    }
  }
}

function readerOf(bytes: Uint8Array, offset: number): DataReader {
  return { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset }
}

/** One entry per row: the dense values with null where the definition level says so. */
function spread(dense: ArrayLike<unknown>, defLevels: number[] | undefined, rows: number): ArrayLike<unknown> {
  if (defLevels === undefined) {
    if (dense.length < rows) throw new PageError(`a page holds ${dense.length} values for ${rows} rows`)
    return dense
  }
  const out = new Array<unknown>(rows)
  for (let i = 0, k = 0; i < rows; i++) out[i] = defLevels[i] === 1 ? dense[k++] : null
  return out
}
