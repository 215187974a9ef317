/**
 * Opening a Parquet file: its footer (metadata and schema, read with hyparquet), the
 * checks that make "not a Parquet file" and "a Parquet file rostore cannot read" clear
 * errors before any row is read, and the row groups as units of work for splits.
 */
import { openInput, type InputHandle } from '../input-file'
import { badInput, libraryFailure } from '../input-error'
import { parquetMetadata, parquetSchema, type FileMetaData, type SchemaTree } from './hyparquet'

const MAGIC = 0x31524150 // "PAR1", little-endian
const ENCRYPTED_MAGIC = 0x45524150 // "PARE"

export interface ParquetFile {
  readonly handle: InputHandle
  readonly size: number
  readonly metadata: FileMetaData
  readonly schema: SchemaTree
  /** Row count of each row group, and the row each starts at in the file. */
  readonly groupRows: readonly number[]
  readonly groupStarts: readonly number[]
}

/** Opens and checks `path`; undefined for a 0-byte file (a job that wrote nothing). The caller closes the handle. */
export async function openParquet(path: string): Promise<ParquetFile | undefined> {
  let handle: InputHandle | undefined
  try {
    handle = await openInput(path)
    const { size } = await handle.stat()
    if (size === 0) {
      await handle.close()
      return undefined
    }
    const metadata = await readFooter(handle, size, path)
    const schema = parquetSchema(metadata)
    const groupRows: number[] = []
    const groupStarts: number[] = []
    let rows = 0
    for (const [g, group] of metadata.row_groups.entries()) {
      const n = Number(group.num_rows)
      if (!Number.isSafeInteger(n) || n < 0) throw badInput(path, `not a readable Parquet file: row group ${g} has ${group.num_rows} rows`)
      if (group.columns.some((c) => c.file_path !== undefined))
        throw badInput(path, 'column chunks in other files (file_path in the footer) are not supported')
      groupStarts.push(rows)
      groupRows.push(n)
      rows += n
    }
    return { handle, size, metadata, schema, groupRows, groupStarts }
  } catch (err) {
    await handle?.close()
    throw libraryFailure(path, 'not a readable Parquet file', err)
  }
}

async function readFooter(handle: InputHandle, size: number, path: string): Promise<FileMetaData> {
  const fail = (reason: string): never => {
    throw badInput(path, `not a readable Parquet file: ${reason}`)
  }
  if (size < 12) fail(`${size} bytes is too short for a Parquet file`)
  const head = Buffer.alloc(4)
  const tail = Buffer.alloc(8)
  await handle.read(head, 0, 4, 0)
  await handle.read(tail, 0, 8, size - 8)
  const magic = tail.readUInt32LE(4)
  if (magic === ENCRYPTED_MAGIC) throw badInput(path, 'encrypted Parquet files (footer PARE) are not supported')
  if (head.readUInt32LE(0) !== MAGIC) fail('it does not start with PAR1')
  if (magic !== MAGIC) fail('it does not end with PAR1 (the file is cut short?)')
  const length = tail.readUInt32LE(0)
  if (length > size - 12) fail(`its footer claims ${length} bytes, more than the file holds`)
  const footer = Buffer.alloc(length + 8)
  await handle.read(footer, 0, footer.length, size - footer.length)
  return parquetMetadata(footer)
}

/** Row groups [start, end) per split: consecutive groups of about `targetBytes` stored bytes. */
export async function rowGroupRanges(path: string, targetBytes: number): Promise<Array<readonly [number, number]>> {
  const file = await openParquet(path)
  if (file === undefined) return []
  try {
    const ranges: Array<readonly [number, number]> = []
    let start = 0
    let bytes = 0
    const groups = file.metadata.row_groups
    for (let g = 0; g < groups.length; g++) {
      bytes += groups[g]!.columns.reduce((s, c) => s + Number(c.meta_data?.total_compressed_size ?? 0), 0)
      if (bytes >= targetBytes || g === groups.length - 1) {
        ranges.push([start, g + 1])
        start = g + 1
        bytes = 0
      }
    }
    return ranges
  } finally {
    await file.handle.close()
  }
}
