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
import { isS3Url } from '../../s3/s3-url'
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

export interface ListOptions {
  /** Every directory or prefix must hold a `_SUCCESS` marker (its writer finished); default false. */
  readonly requireSuccess?: boolean
}

/**
 * The files named by `inputs`, in order: a file as given, a directory as every regular
 * file directly in it (sorted by name; hidden ones, `.*`, and job markers, `_*` such as
 * `_SUCCESS`, skipped as Spark and Hadoop do; symbolic links followed). An `s3://` URL
 * names one object, or every object directly under it as a prefix, by the same rules. A
 * file named twice (also through a link) is read once, at its first place, so a directory
 * plus a file in it does not duplicate every key of that file.
 */
/** What Spark, Hadoop and friends leave beside their parts: `_SUCCESS`, `_committed_*`, `.crc` files. */
export function isHiddenPart(name: string): boolean {
  return name.startsWith('_') || name.startsWith('.')
}

export async function listInputFiles(inputs: readonly string[], opts: ListOptions = {}): Promise<string[]> {
  const files: string[] = []
  const seen = new Set<string>()
  const add = async (file: string): Promise<void> => {
    // By real path: a link to a file, or the same file spelled two ways, is one file.
    const id = isS3Url(file) ? file : await realpath(file).catch(() => resolve(file))
    if (seen.has(id)) return
    seen.add(id)
    files.push(file)
  }
  for (const input of inputs) {
    if (isS3Url(input)) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { listS3Input } = require('./s3-input') as typeof import('./s3-input')
      for (const part of await listS3Input(input, opts.requireSuccess === true)) await add(part)
      continue
    }
    const info = await stat(input).catch((err: unknown) => {
      throw wrapFileError(input, err)
    })
    if (info.isFile()) {
      if (opts.requireSuccess === true) throw badInput(input, '--require-success needs a directory of parts, not one file')
      await add(input)
    } else if (info.isDirectory()) {
      const entries = await readdir(input, { withFileTypes: true }).catch((err: unknown) => {
        throw wrapFileError(input, err)
      })
      const names = entries.filter((e) => !isHiddenPart(e.name)).map((e) => e.name)
      if (opts.requireSuccess === true && !entries.some((e) => e.name === '_SUCCESS'))
        throw badInput(input, 'no _SUCCESS marker in this directory: the job writing it has not finished (or failed)')
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
