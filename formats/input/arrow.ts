/**
 * Arrow IPC input, file format (.arrow/.feather v2) and stream format (.arrows) alike.
 * The key is the column --key-field (default "key"), the value the column --value-field,
 * else "value", else the whole row as JSON. Utf8 columns give 'string' bytes, Binary
 * columns 'bytes', everything else JSON text (Int64 as exact digits); see row-value.ts.
 *
 * The reader is given a file handle, not a stream: apache-arrow then reads the file
 * format by random access, batch by batch, where from a stream it would first load the
 * whole file into memory.
 */
import { open, type FileHandle } from 'node:fs/promises'
import { RecordBatchReader, type RecordBatch, type Vector } from 'apache-arrow'
import { atRow, badInput, FieldError, libraryFailure, refuseRange } from './input-error'
import { fieldKey, fieldValue, toJsonText, type FieldBytes } from './row-value'
import type { InputRecord, KeyKind, ReadOptions, ValueKind } from './types'

export async function* readArrow(path: string, opts: ReadOptions = {}): AsyncGenerator<InputRecord> {
  refuseRange('Arrow', opts)
  const signal = opts.signal
  signal?.throwIfAborted()
  const keyField = opts.keyField ?? 'key'
  let file: FileHandle | undefined
  let reader: RecordBatchReader | undefined
  // Stream format only: whether the file ends with the end-of-stream marker.
  let streamEnded: boolean | undefined
  try {
    try {
      file = await open(path, 'r')
      // An empty file is an input with no rows (a job that wrote nothing), not a broken one.
      const { size } = await file.stat()
      if (size === 0) return
      streamEnded = await checkFooter(file, size, path)
      reader = await RecordBatchReader.from(file)
      await reader.open()
      // A file of a few bytes opens as a reader with no schema message at all.
      if (reader.schema === undefined) throw badInput(path, 'not a readable Arrow IPC file: no schema message (the file is cut short)')
    } catch (err) {
      throw libraryFailure(path, 'not a readable Arrow IPC file', err)
    }
    const names = reader.schema.fields.map((f) => f.name)
    const column = (name: string): string => {
      if (!names.includes(name)) throw badInput(path, `no column '${name}'; columns are: ${names.join(', ')}`)
      return name
    }
    column(keyField)
    const valueField = opts.valueField !== undefined ? column(opts.valueField) : names.includes('value') ? 'value' : undefined
    const batches = reader[Symbol.asyncIterator]()
    let row = 0
    for (;;) {
      let step: IteratorResult<RecordBatch>
      try {
        step = await batches.next()
      } catch (err) {
        throw libraryFailure(atRow(path, row), 'cannot read Arrow data', err)
      }
      if (step.done === true) {
        // Read now, not before: a cut inside a message keeps apache-arrow's own message.
        if (streamEnded === false) {
          throw badInput(
            atRow(path, row),
            'truncated Arrow IPC stream: the file ends without the end-of-stream marker (rows from here on are missing)',
          )
        }
        break
      }
      signal?.throwIfAborted()
      const batch = step.value
      const keys = batch.getChild(keyField)
      const values = valueField === undefined ? undefined : batch.getChild(valueField)
      const all = valueField === undefined ? names.map((name) => [name, batch.getChild(name)] as const) : []
      for (let i = 0; i < batch.numRows; i++, row++) {
        if (signal?.aborted) signal.throwIfAborted()
        let key: FieldBytes<KeyKind>
        let value: FieldBytes<ValueKind>
        try {
          key = fieldKey(keys?.get(i), keyField)
          value =
            values !== undefined ? fieldValue(values?.get(i)) : { bytes: Buffer.from(toJsonText(wholeRow(all, i)), 'utf8'), kind: 'json' }
        } catch (err) {
          if (err instanceof FieldError) throw badInput(atRow(path, row), err.message)
          throw err
        }
        yield { key: key.bytes, value: value.bytes, keyKind: key.kind, valueKind: value.kind, source: { path, row }, order: row }
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
async function checkFooter(file: FileHandle, size: number, path: string): Promise<boolean | undefined> {
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

function wholeRow(columns: ReadonlyArray<readonly [string, Vector | null]>, i: number): Record<string, unknown> {
  // Prototype-less, so a column named "__proto__" is just a column.
  const row: Record<string, unknown> = Object.create(null) as Record<string, unknown>
  for (const [name, vector] of columns) row[name] = vector?.get(i) ?? null
  return row
}
