/**
 * Arrow IPC input, file format (.arrow/.feather v2) and stream format (.arrows) alike.
 * The key is the column --key-field (default "key"), the value the column --value-field,
 * else "value", else the whole row as JSON. Each column's bytes follow its type with the
 * same rules as Parquet (arrow-columns.ts); a NULL value is the empty value of its
 * column's kind, a NULL key an error naming the row. Bodies compressed with LZ4_FRAME or
 * ZSTD (pyarrow's `compression=`) are read through codecs registered with apache-arrow.
 *
 * The reader is given a file handle, not a stream: apache-arrow then reads the file
 * format by random access, batch by batch, where from a stream it would first load the
 * whole file into memory. A split of a file-format file reads record batches
 * [groupStart, groupEnd) and numbers rows as in the whole file.
 */
import type { FileHandle } from 'node:fs/promises'
import { Message, RecordBatchReader, type RecordBatch } from 'apache-arrow'
import { arrowColumn, type ArrowColumn } from './arrow-columns'
import { registerArrowCodecs } from './arrow-codecs'
import { atRow, badInput, FieldError, libraryFailure } from './input-error'
import { openInput, type InputHandle } from './input-file'
import { keyProblem } from './row-value'
import type { InputRecord, KeyKind, ReadOptions, ValueKind } from './types'

registerArrowCodecs()

/**
 * apache-arrow reads a file by random access when given something that looks like a
 * FileHandle (it calls only `stat`, `read` and `close`); an object in S3 offers those too.
 */
function asArrowFile(file: InputHandle): FileHandle {
  return file as unknown as FileHandle
}

interface Planned {
  readonly name: string
  readonly index: number
  readonly column: ArrowColumn
}

const EMPTY = Buffer.alloc(0)
const JSON_NULL = Buffer.from('null')

export async function* readArrow(path: string, opts: ReadOptions = {}): AsyncGenerator<InputRecord> {
  if (opts.start !== undefined || opts.end !== undefined) {
    throw new RangeError('Arrow files cannot be read by byte range; split them by record batch')
  }
  const signal = opts.signal
  signal?.throwIfAborted()
  let file: InputHandle | undefined
  let reader: RecordBatchReader | undefined
  // Stream format only: whether the file ends with the end-of-stream marker.
  let streamEnded: boolean | undefined
  try {
    try {
      file = await openInput(path)
      // An empty file is an input with no rows (a job that wrote nothing), not a broken one.
      const { size } = await file.stat()
      if (size === 0) return
      streamEnded = await checkFooter(file, size, path)
      reader = await RecordBatchReader.from(asArrowFile(file))
      await reader.open()
      // A file of a few bytes opens as a reader with no schema message at all.
      if (reader.schema === undefined) throw badInput(path, 'not a readable Arrow IPC file: no schema message (the file is cut short)')
    } catch (err) {
      throw libraryFailure(path, 'not a readable Arrow IPC file', err)
    }
    const fields = reader.schema.fields
    const names = fields.map((f) => f.name)
    const plan = (name: string): Planned => {
      const index = names.indexOf(name)
      if (index < 0) throw badInput(path, `no column '${name}'; columns are: ${names.join(', ')}`)
      const column = arrowColumn(fields[index]!)
      if (typeof column === 'string') throw badInput(path, `column '${name}' has ${column}`)
      return { name, index, column }
    }
    const keyName = opts.keyField ?? 'key'
    const key = plan(keyName)
    if (key.column.keyKind === undefined) {
      throw badInput(path, `key column '${keyName}' is of type ${key.column.describe}; a key must be text, a number or bytes`)
    }
    const keyKind: KeyKind = key.column.keyKind
    const valueName = opts.valueField ?? (names.includes('value') ? 'value' : undefined)
    const value = valueName === undefined ? undefined : plan(valueName)
    const row = valueName === undefined ? names.map(plan) : []
    const valueKind: ValueKind = value?.column.valueKind ?? 'json'
    const batches = batchesOf(reader, file!, opts)
    let rowNumber = (await batches.firstRow) ?? 0
    for (;;) {
      let step: IteratorResult<RecordBatch>
      try {
        step = await batches.next()
      } catch (err) {
        throw libraryFailure(atRow(path, rowNumber), 'cannot read Arrow data', err)
      }
      if (step.done === true) {
        // Read now, not before: a cut inside a message keeps apache-arrow's own message.
        if (streamEnded === false) {
          throw badInput(
            atRow(path, rowNumber),
            'truncated Arrow IPC stream: the file ends without the end-of-stream marker (rows from here on are missing)',
          )
        }
        break
      }
      signal?.throwIfAborted()
      const batch = step.value
      const data = (p: Planned) => batch.data.children[p.index]!
      const keyData = data(key)
      const valueData = value === undefined ? undefined : data(value)
      const rowData = row.map((p) => [p, data(p)] as const)
      for (let i = 0; i < batch.numRows; i++, rowNumber++) {
        if (signal?.aborted) signal.throwIfAborted()
        let keyBytes: Buffer
        let valueBytes: Buffer
        try {
          if (key.column.isNull(keyData, i)) throw new FieldError(`key column '${keyName}' is null`)
          keyBytes = key.column.key(keyData, i)
          const problem = keyProblem(keyBytes)
          if (problem !== undefined) throw new FieldError(problem)
          if (value !== undefined) {
            valueBytes = value.column.isNull(valueData!, i) ? (valueKind === 'json' ? JSON_NULL : EMPTY) : value.column.value(valueData!, i)
          } else {
            let text = '{'
            for (let c = 0; c < rowData.length; c++) {
              const [p, d] = rowData[c]!
              text += `${c === 0 ? '' : ','}${JSON.stringify(p.name)}:${p.column.isNull(d, i) ? 'null' : p.column.json(d, i)}`
            }
            valueBytes = Buffer.from(`${text}}`, 'utf8')
          }
        } catch (err) {
          if (err instanceof FieldError) throw badInput(atRow(path, rowNumber), err.message)
          throw err
        }
        yield { key: keyBytes, value: valueBytes, keyKind, valueKind, source: { path, row: rowNumber }, order: rowNumber }
      }
    }
  } finally {
    // Closing the handle is enough to release the reader; cancel() may throw on a reader
    // that failed half-way, and there is nothing to do about that.
    try {
      await reader?.cancel()
    } catch {
      // already failed; the handle is closed below either way
    }
    await file?.close()
  }
}

/**
 * The record batches to read: all of them in order, or for a split of a file-format file
 * batches [groupStart, groupEnd) by random access, with the row number of the first
 * (from the row counts in the batches' message headers, without reading their bodies).
 */
function batchesOf(
  reader: RecordBatchReader,
  file: InputHandle,
  opts: ReadOptions,
): { firstRow: Promise<number | undefined>; next(): Promise<IteratorResult<RecordBatch>> } {
  if (opts.groupStart === undefined && opts.groupEnd === undefined) {
    const it = reader[Symbol.asyncIterator]()
    return { firstRow: Promise.resolve(0), next: () => it.next() }
  }
  if (!reader.isFile()) throw new RangeError('only Arrow IPC files (not streams) can be read by record batch')
  const first = opts.groupStart ?? 0
  const end = Math.min(opts.groupEnd ?? reader.numRecordBatches, reader.numRecordBatches)
  let index = first
  return {
    firstRow: batchRowCounts(reader, file, first).then((counts) => counts.reduce((s, n) => s + n, 0)),
    next: async () => {
      if (index >= end) return { done: true, value: undefined }
      const batch = await (reader.readRecordBatch(index++) as Promise<RecordBatch | null>)
      if (batch === null) throw new Error(`record batch ${index - 1} is missing`)
      return { done: false, value: batch }
    },
  }
}

/** Row counts of the first `count` record batches of an Arrow IPC file, from their message headers. */
export async function batchRowCounts(reader: RecordBatchReader, file: InputHandle, count: number): Promise<number[]> {
  const footer = reader.footer
  if (footer === null) throw new Error('an Arrow IPC file without its footer')
  const counts: number[] = []
  for (let b = 0; b < count; b++) {
    const block = footer.getRecordBatch(b)
    if (block === null) throw new Error(`record batch ${b} is not in the footer`)
    const meta = Buffer.alloc(block.metaDataLength)
    await file.read(meta, 0, meta.length, block.offset)
    // The message starts with 0xFFFFFFFF and its length (streams before Arrow 0.15: the length alone).
    const skip = meta.readUInt32LE(0) === CONTINUATION ? 8 : 4
    const message = Message.decode(meta.subarray(skip))
    if (!message.isRecordBatch()) throw new Error(`block ${b} of the footer is not a record batch`)
    counts.push(Number(message.header().length))
  }
  return counts
}

const MAGIC = Buffer.from('ARROW1')

const CONTINUATION = 0xffffffff

/**
 * A file-format file cut short (an interrupted copy) has lost its footer, and
 * apache-arrow then fails with a null dereference; say what is actually wrong.
 *
 * The stream format has no footer, and a stream cut exactly between two messages reads
 * as a shorter, complete stream: only the end-of-stream marker its writer adds on close
 * tells the two apart (0xFFFFFFFF then a zero length; streams older than Arrow 0.15,
 * without continuation markers, end with the zero length alone). For a stream, returns
 * whether the file ends with it; undefined for the file format.
 */
async function checkFooter(file: InputHandle, size: number, path: string): Promise<boolean | undefined> {
  const head = Buffer.alloc(MAGIC.length)
  const tail = Buffer.alloc(MAGIC.length)
  await file.read(head, 0, head.length, 0)
  if (!head.equals(MAGIC)) {
    if (size < 8) return false
    const last = Buffer.alloc(8)
    await file.read(last, 0, 8, size - 8)
    const legacy = head.readUInt32LE(0) !== CONTINUATION
    return last.readUInt32LE(4) === 0 && (legacy || last.readUInt32LE(0) === CONTINUATION)
  }
  if (size >= 2 * MAGIC.length) await file.read(tail, 0, tail.length, size - tail.length)
  if (!tail.equals(MAGIC)) throw badInput(path, 'truncated Arrow IPC file: it starts like the file format but has no footer')
  return undefined
}

/**
 * Record batches [start, end) per split of an Arrow IPC file: consecutive batches of about
 * `targetBytes`. Streams (and empty files) are one split: they can only be read in order.
 */
export async function recordBatchRanges(path: string, targetBytes: number): Promise<Array<readonly [number, number]> | undefined> {
  let file: InputHandle | undefined
  let reader: RecordBatchReader | undefined
  try {
    file = await openInput(path)
    const { size } = await file.stat()
    if (size < 2 * MAGIC.length) return undefined
    const head = Buffer.alloc(MAGIC.length)
    await file.read(head, 0, head.length, 0)
    if (!head.equals(MAGIC)) return undefined
    await checkFooter(file, size, path)
    reader = await RecordBatchReader.from(asArrowFile(file))
    await reader.open()
    const footer = reader.footer
    if (footer === null) return undefined
    const ranges: Array<readonly [number, number]> = []
    let start = 0
    let bytes = 0
    for (let b = 0; b < footer.numRecordBatches; b++) {
      const block = footer.getRecordBatch(b)
      bytes += (block?.bodyLength ?? 0) + (block?.metaDataLength ?? 0)
      if (bytes >= targetBytes || b === footer.numRecordBatches - 1) {
        ranges.push([start, b + 1])
        start = b + 1
        bytes = 0
      }
    }
    return ranges
  } catch (err) {
    throw libraryFailure(path, 'not a readable Arrow IPC file', err)
  } finally {
    try {
      await reader?.cancel()
    } catch {
      // the handle is closed below either way
    }
    await file?.close()
  }
}
