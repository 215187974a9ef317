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
  try {
    try {
      file = await open(path, 'r')
      // An empty file is an input with no rows (a job that wrote nothing), not a broken one.
      const { size } = await file.stat()
      if (size === 0) return
      await checkFooter(file, size, path)
      reader = await RecordBatchReader.from(file)
      await reader.open()
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
      if (step.done === true) break
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
          value = values !== undefined ? fieldValue(values?.get(i)) : { bytes: Buffer.from(toJsonText(wholeRow(all, i)), 'utf8'), kind: 'json' }
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

/**
 * A file-format file cut short (an interrupted copy) has lost its footer, and
 * apache-arrow then fails with a null dereference; say what is actually wrong.
 */
async function checkFooter(file: FileHandle, size: number, path: string): Promise<void> {
  const head = Buffer.alloc(MAGIC.length)
  const tail = Buffer.alloc(MAGIC.length)
  await file.read(head, 0, head.length, 0)
  if (!head.equals(MAGIC)) return // the stream format has no footer
  if (size >= 2 * MAGIC.length) await file.read(tail, 0, tail.length, size - tail.length)
  if (!tail.equals(MAGIC)) throw badInput(path, 'truncated Arrow IPC file: it starts like the file format but has no footer')
}

function wholeRow(columns: ReadonlyArray<readonly [string, Vector | null]>, i: number): Record<string, unknown> {
  // Prototype-less, so a column named "__proto__" is just a column.
  const row: Record<string, unknown> = Object.create(null) as Record<string, unknown>
  for (const [name, vector] of columns) row[name] = vector?.get(i) ?? null
  return row
}
