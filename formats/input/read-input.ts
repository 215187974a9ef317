/**
 * The front door of input reading: which files an input list names, and one reader for
 * every format behind a single signature.
 */
import { readdir, realpath, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { readCsv } from './csv'
import { badInput, wrapFileError } from './input-error'
import { readJsonl } from './jsonl'
import { readTsv } from './tsv'
import type { InputFormat, InputRecord, ReadOptions } from './types'

/**
 * The columnar readers are loaded when first used: their libraries (hyparquet, codecs,
 * apache-arrow) take ~0.25 s of CPU to load, paid by every build worker thread, also
 * the ones that only ever read TSV. A synchronous require, so the reader's generator is
 * returned as it is, with no extra step per record.
 */
function readParquetLazily(path: string, opts: ReadOptions): AsyncGenerator<InputRecord> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('./parquet') as typeof import('./parquet')).readParquet(path, opts)
}

function readArrowLazily(path: string, opts: ReadOptions): AsyncGenerator<InputRecord> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('./arrow') as typeof import('./arrow')).readArrow(path, opts)
}

const READERS: Readonly<Record<InputFormat, (path: string, opts: ReadOptions) => AsyncGenerator<InputRecord>>> = {
  tsv: readTsv,
  csv: readCsv,
  jsonl: readJsonl,
  parquet: readParquetLazily,
  arrow: readArrowLazily,
}

/** Records of one file (or one byte range of it, for TSV and JSON lines), read as pulled. */
export function readInput(path: string, format: InputFormat, opts: ReadOptions = {}): AsyncGenerator<InputRecord> {
  const reader = READERS[format]
  if (reader === undefined) throw new RangeError(`unknown input format '${String(format)}'`)
  return reader(path, opts)
}

/**
 * The files named by `inputs`, in order: a file as given, a directory as every regular
 * file directly in it (sorted by name, hidden ones skipped; symbolic links followed). A
 * file named twice (also through a link) is read once, at its first place, so a
 * directory plus a file in it does not duplicate every key of that file.
 */
export async function listInputFiles(inputs: string[]): Promise<string[]> {
  const files: string[] = []
  const seen = new Set<string>()
  const add = async (file: string): Promise<void> => {
    // By real path: a link to a file, or the same file spelled two ways, is one file.
    const id = await realpath(file).catch(() => resolve(file))
    if (seen.has(id)) return
    seen.add(id)
    files.push(file)
  }
  for (const input of inputs) {
    const info = await stat(input).catch((err: unknown) => {
      throw wrapFileError(input, err)
    })
    if (info.isFile()) {
      await add(input)
    } else if (info.isDirectory()) {
      const entries = await readdir(input, { withFileTypes: true }).catch((err: unknown) => {
        throw wrapFileError(input, err)
      })
      const names = entries.filter((e) => !e.name.startsWith('.')).map((e) => e.name)
      names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      for (const name of names) {
        const file = join(input, name)
        // readdir's types do not follow links; stat does. A dangling link is skipped like
        // any other non-file entry rather than failing the whole directory.
        const entry = await stat(file).catch(() => undefined)
        if (entry?.isFile() === true) await add(file)
      }
    } else {
      throw badInput(input, 'not a regular file or a directory')
    }
  }
  return files
}
