/**
 * The parts of hyparquet (https://github.com/hyparam/hyparquet, MIT, no dependencies)
 * rostore uses: footer and schema parsing, page headers, the value decoders of every
 * encoding, and the assembly of nested columns. Pages are read, decompressed and turned
 * into rows by our own code (pages.ts, column-cursor.ts), so memory stays bounded by a
 * page and byte-array values never become one object each before they are needed.
 *
 * The page-level functions live in hyparquet's `src/*.js` modules (exported through its
 * package `exports`, but not its documented API): the version is pinned exactly in
 * package.json, and the reader tests exercise every function named here.
 *
 * hyparquet is ES modules only; Node ≥ 20.19 require()s it natively (Jest is set up to
 * compile it, see jest.config.js).
 */
import type { DataReader, FileMetaData, PageHeader, ParquetReadOptions, ParquetType, SchemaTree } from 'hyparquet'

export type { ColumnMetaData, DataReader, FileMetaData, PageHeader, SchemaElement, SchemaTree } from 'hyparquet'

type Output = unknown[] | Int32Array | BigInt64Array

interface HyparquetMetadata {
  parquetMetadata(footer: Uint8Array): FileMetaData
  parquetSchema(metadata: { schema: FileMetaData['schema'] }): SchemaTree
}
interface HyparquetRead {
  parquetRead(options: ParquetReadOptions): Promise<void>
}
interface HyparquetColumn {
  parquetHeader(reader: DataReader): PageHeader
}
interface HyparquetEncoding {
  readRleBitPackedHybrid(reader: DataReader, width: number, output: Output, length?: number): void
  byteStreamSplit(reader: DataReader, count: number, type: ParquetType, typeLength: number | undefined): ArrayLike<unknown>
}
interface HyparquetPlain {
  readPlain(reader: DataReader, type: ParquetType, count: number, fixedLength: number | undefined): ArrayLike<unknown>
}
interface HyparquetDelta {
  deltaBinaryUnpack(reader: DataReader, count: number, output: Int32Array | BigInt64Array): void
  deltaLengthByteArray(reader: DataReader, count: number, output: Uint8Array[]): void
  deltaByteArray(reader: DataReader, count: number, output: Uint8Array[]): void
}

// The modules used, not the package index, which loads every reader, its query engine and
// codecs into each build worker thread; parquetRead only for nested columns.
const metadata = require('hyparquet/src/metadata.js') as HyparquetMetadata
const column = require('hyparquet/src/column.js') as HyparquetColumn
const encoding = require('hyparquet/src/encoding.js') as HyparquetEncoding
const plain = require('hyparquet/src/plain.js') as HyparquetPlain
const delta = require('hyparquet/src/delta.js') as HyparquetDelta

export const { parquetMetadata, parquetSchema } = metadata
let read: HyparquetRead | undefined
export function parquetRead(options: ParquetReadOptions): Promise<void> {
  read ??= require('hyparquet/src/read.js') as HyparquetRead
  return read.parquetRead(options)
}
export const { parquetHeader } = column
export const { readRleBitPackedHybrid, byteStreamSplit } = encoding
export const { readPlain } = plain
export const { deltaBinaryUnpack, deltaLengthByteArray, deltaByteArray } = delta
