/**
 * How input files are cut into units of work for the build's map step. TSV and JSON lines
 * files larger than the target are cut into byte ranges of about the target size (their
 * readers then take exactly the lines that start in the range, so a cut may fall anywhere).
 * Parquet files are cut between row groups and Arrow IPC files (file format) between
 * record batches, consecutive groups of about the target's stored bytes per split. CSV
 * files and Arrow IPC streams cannot be entered in the middle and are one split per file.
 */
import { wrapFileError } from './input-error'
import { inputSize } from './input-file'
import type { InputFormat } from './types'

export interface InputSplit {
  readonly path: string
  /** Position of the file in the list given to planSplits: orders records across files. */
  readonly fileIndex: number
  /** Byte range [start, end); set for TSV and JSON lines files (whole file when small). */
  readonly start?: number
  readonly end?: number
  /** Row groups (Parquet) or record batches (Arrow IPC file format) [groupStart, groupEnd). */
  readonly groupStart?: number
  readonly groupEnd?: number
}

const BYTE_RANGE_FORMATS: ReadonlySet<InputFormat> = new Set<InputFormat>(['tsv', 'jsonl'])

export async function planSplits(files: string[], format: InputFormat, targetBytes: number): Promise<InputSplit[]> {
  if (!Number.isSafeInteger(targetBytes) || targetBytes <= 0) {
    throw new RangeError(`split target must be a positive number of bytes, got ${targetBytes}`)
  }
  const splits: InputSplit[] = []
  for (let fileIndex = 0; fileIndex < files.length; fileIndex++) {
    const path = files[fileIndex]!
    if (format === 'parquet' || format === 'arrow') {
      // Loaded here, not at the top: a TSV build need not load the columnar libraries (see read-input.ts).
      const ranges =
        format === 'parquet'
          ? // eslint-disable-next-line @typescript-eslint/no-require-imports
            await (require('./parquet/file') as typeof import('./parquet/file')).rowGroupRanges(path, targetBytes)
          : // eslint-disable-next-line @typescript-eslint/no-require-imports
            await (require('./arrow') as typeof import('./arrow')).recordBatchRanges(path, targetBytes)
      if (ranges === undefined || ranges.length === 0) splits.push({ path, fileIndex })
      for (const [groupStart, groupEnd] of ranges ?? []) splits.push({ path, fileIndex, groupStart, groupEnd })
      continue
    }
    if (!BYTE_RANGE_FORMATS.has(format)) {
      splits.push({ path, fileIndex })
      continue
    }
    const size = await inputSize(path).catch((err: unknown) => {
      throw wrapFileError(path, err)
    })
    // Equal parts rather than target-sized ones and a runt at the end.
    const parts = Math.max(1, Math.ceil(size / targetBytes))
    for (let k = 0; k < parts; k++) {
      splits.push({ path, fileIndex, start: Math.floor((size * k) / parts), end: Math.floor((size * (k + 1)) / parts) })
    }
  }
  return splits
}
