import { isUtf8 } from 'node:buffer'
import { once } from 'node:events'
import { createWriteStream, type WriteStream } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { StoreError } from '../../common/errors'
import type { RecordSink } from './dump'
import { arrowSink } from './dump-arrow'
import type { OutputColumns } from './dump-columns'
import { parquetSink } from './dump-parquet'

/**
 * The output formats of `rostore dump`: each is a valid `rostore build` input whose rebuild
 * (same cluster, version and options) gives byte-identical chunk files, because each
 * record's key and value bytes come back exactly (formats/input/row-value.ts):
 *   jsonl    {"key":"...","value":"..."}: JSON strings give back their UTF-8 bytes; keys and
 *            values that are not UTF-8 text cannot be written (refused)
 *   tsv      key<TAB>value: text with no tab in the key, no newline or carriage return
 *            anywhere (refused otherwise)
 *   arrow    Arrow IPC file, columns key and value: Utf8 where the store holds text, Binary
 *            where it holds bytes (any bytes)
 *   parquet  the same columns in Parquet: STRING or plain BYTE_ARRAY
 */
export type { OutputColumns } from './dump-columns'

export const DUMP_OUTPUT_FORMATS = ['jsonl', 'tsv', 'parquet', 'arrow'] as const
export type DumpOutputFormat = (typeof DUMP_OUTPUT_FORMATS)[number]

/** A sink writing one output file: to a temporary name, renamed on commit, removed on abort. */
export interface OutputSink extends RecordSink {
  commit(): Promise<void>
  abort(): Promise<void>
}

/** Columns for a store's serializers: text where the store holds text, bytes where it holds bytes. */
export function columnsFor(keySerializer: string, valueSerializer: string, keysOnly: boolean): OutputColumns {
  return { keyBinary: keySerializer === 'bytes', valueBinary: valueSerializer === 'bytes', keysOnly }
}

export async function createOutput(path: string, format: DumpOutputFormat, cols: OutputColumns): Promise<OutputSink> {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`)
  let inner: { write: RecordSink['write']; finish(): Promise<void>; destroy(): void }
  switch (format) {
    case 'jsonl':
      inner = textSink(tmp, jsonLine)
      break
    case 'tsv':
      inner = textSink(tmp, tsvLine)
      break
    case 'arrow':
      inner = await arrowSink(tmp, cols)
      break
    case 'parquet':
      inner = await parquetSink(tmp, cols)
      break
  }
  return {
    write: (k, v) => inner.write(k, v),
    commit: async () => {
      await inner.finish()
      await rename(tmp, path)
    },
    abort: async () => {
      inner.destroy()
      await rm(tmp, { force: true })
    },
  }
}

function refuse(format: string, n: number, why: string, instead: string): StoreError {
  return new StoreError('RO_BAD_OPTION', `--format ${format} cannot hold record ${n}: ${why}; use ${instead}`)
}

type LineOf = (key: Buffer, value: Buffer | undefined, n: number) => string

const jsonLine: LineOf = (key, value, n) => {
  if (!isUtf8(key)) throw refuse('jsonl', n, 'its key is not UTF-8 text', '--format parquet or arrow')
  if (value === undefined) return `{"key":${JSON.stringify(key.toString('utf8'))}}\n`
  if (!isUtf8(value)) throw refuse('jsonl', n, 'its value is not UTF-8 text', '--format parquet or arrow')
  return `{"key":${JSON.stringify(key.toString('utf8'))},"value":${JSON.stringify(value.toString('utf8'))}}\n`
}

const tsvLine: LineOf = (key, value, n) => {
  const text = (b: Buffer, what: string, tabOk: boolean): string => {
    if (!isUtf8(b)) throw refuse('tsv', n, `its ${what} is not UTF-8 text`, '--format parquet or arrow')
    const s = b.toString('utf8')
    if (/[\n\r]/.test(s) || (!tabOk && s.includes('\t')))
      throw refuse('tsv', n, `its ${what} holds a ${tabOk ? '' : 'tab, '}newline or carriage return`, '--format jsonl, parquet or arrow')
    if (n === 1 && what === 'key' && s.startsWith('\ufeff'))
      throw refuse('tsv', n, 'its key starts with a byte order mark', '--format jsonl')
    return s
  }
  return `${text(key, 'key', false)}\t${value === undefined ? '' : text(value, 'value', true)}\n`
}

/** Lines gathered into ~1 MiB writes, with back pressure from the file. */
function textSink(path: string, lineOf: LineOf): { write: RecordSink['write']; finish(): Promise<void>; destroy(): void } {
  const out: WriteStream = createWriteStream(path)
  let failed: Error | undefined
  out.on('error', (err) => (failed = err))
  let n = 0
  let pending: string[] = []
  let pendingBytes = 0
  const flush = async (): Promise<void> => {
    if (failed) throw new StoreError('RO_IO', `${path}: ${failed.message}`, { cause: failed })
    const text = pending.join('')
    pending = []
    pendingBytes = 0
    if (!out.write(text)) await once(out, 'drain')
  }
  return {
    write: async (key, value) => {
      const line = lineOf(key, value, ++n)
      pending.push(line)
      pendingBytes += line.length
      if (pendingBytes >= 1 << 20) await flush()
    },
    finish: async () => {
      await flush()
      out.end()
      await once(out, 'close')
      if (failed) throw new StoreError('RO_IO', `${path}: ${failed.message}`, { cause: failed })
    },
    destroy: () => out.destroy(),
  }
}
