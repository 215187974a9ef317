import { StoreError } from '../../../common/errors'
import { readInput } from '../../../formats/input/read-input'
import type { InputRecord } from '../../../formats/input/types'
import { createCodec } from '../../../formats/store/chunk/codec'
import { createKeyHasher } from '../../../formats/store/layout/key-hash'
import { clusterLayout } from '../../../cluster/cluster'
import { createMapContext, mapRecord } from '../../map-step'
import type { MappedRecord } from '../../mapped-record'
import { hdfsCommand, fetchInput, uriPath } from './job-fs'
import { specDictionary, type HadoopJobSpec } from './job-spec'
import { atOffset, LineRecords } from './line-records'
import { rangeLines } from './range-lines'
import { isS3Url } from '../../../s3/s3-url'
import { mapStatsLine, shuffleLineSize, writeShuffleLine } from './shuffle-key'
import { emptyKinds, type FilePositions, type MapStats } from './stats'
import { SyncLineReader, SyncWriter } from './streaming-io'
import { hadoopStatus, taskEnv } from './task-env'

/**
 * `rostore hadoop map`: the Streaming mapper. stdin carries
 *
 *   text formats (TextInputFormat, stream.map.input.ignoreKey=false):  <byte offset>\t<line>
 *   Parquet/Arrow (NLineInputFormat over the job's input list):        <offset>\t<file path>
 *   --file-field (Spark RDD.pipe and other drivers):                   <file path>\t<byte offset>\t<line>
 *
 * and the input file of a text split comes from `mapreduce_map_input_file`. Every record
 * goes through the shared map step (mapRecord); each mapped record is written as one
 * shuffle line (shuffle-key.ts). Last comes one statistics line for finalize: records,
 * key/value kinds (the serializer decision) and, per file, the first blank and the last
 * non-blank line offsets (blank lines are only allowed at the end of a file).
 */
export interface MapTaskOptions {
  readonly job: HadoopJobSpec
  readonly env?: NodeJS.ProcessEnv
  /** File descriptors; default stdin and stdout. */
  readonly input?: number
  readonly output?: number
  readonly fileField?: boolean
  /**
   * Text formats: read the lines starting in this byte range of the task's input file
   * (`mapreduce_map_input_file`, a local path or an s3:// object) directly, instead of
   * stdin. The Ray engine's map tasks use it so that the bytes go from storage to the task.
   */
  readonly range?: { readonly start: number; readonly end: number }
}

const TAB = 0x09

export async function runMapTask(o: MapTaskOptions): Promise<MapStats> {
  const job = o.job
  const env = o.env ?? process.env
  const task = taskEnv(env)
  const ctx = createMapContext(
    clusterLayout(job.cluster),
    job.replication,
    job.chunks,
    await createKeyHasher(job.keyHash),
    createCodec(job.compression, { dictionary: specDictionary(job), level: job.zstdLevel, forEncode: true }),
    job.layout,
  )
  const out = new SyncWriter(o.output ?? 1)
  const reader = new SyncLineReader(o.input ?? 0)
  const files = new FileIndex(job.inputs)
  const kinds = emptyKinds()
  const positions = new Map<number, { firstBlank: number | null; lastLine: number | null }>()
  let records = 0
  // zstd: value bytes before and after compression, each record once (not per replica).
  const valueBytes = { raw: 0, stored: 0 }

  const emit = (m: MappedRecord): void => {
    const { buf, at } = out.reserve(shuffleLineSize(m))
    out.advance(writeShuffleLine(m, buf, at))
  }
  const take = (rec: InputRecord, fileIndex: number): void => {
    valueBytes.stored += mapRecord(rec, fileIndex, ctx, emit).length
    valueBytes.raw += rec.value.length
    kinds.keys[rec.keyKind]++
    kinds.values[rec.valueKind]++
    records++
  }

  if (job.format === 'parquet' || job.format === 'arrow') {
    await mapFiles(job, reader, files, take)
  } else {
    if (
      !o.fileField &&
      o.range === undefined &&
      env['mapreduce_task_attempt_id'] !== undefined &&
      env['stream_map_input_ignoreKey'] !== 'false'
    ) {
      throw new StoreError('RO_BAD_OPTION', 'the mapper needs byte offsets: run the job with -D stream.map.input.ignoreKey=false')
    }
    const lines = new LineRecords({
      format: job.format,
      keyField: job.keyField,
      valueField: job.valueField,
      csvHeaders: job.csvHeaders?.map((h) => Buffer.from(h, 'base64')),
    })
    const line = (buf: Buffer, s: number, e: number, offset: number, fileIndex: number, file: string): void => {
      const r = lines.parse(buf, s, e, offset, fileIndex, file)
      let p = positions.get(fileIndex)
      if (p === undefined) positions.set(fileIndex, (p = { firstBlank: null, lastLine: null }))
      if (r === 'blank') {
        if (p.firstBlank === null || offset < p.firstBlank) p.firstBlank = offset
        return
      }
      if (p.firstBlank !== null && p.firstBlank < offset)
        throw new StoreError('RO_BAD_INPUT', `${atOffset(file, p.firstBlank)}: empty line`)
      if (p.lastLine === null || offset > p.lastLine) p.lastLine = offset
      if (r !== 'header') take(r, fileIndex)
    }
    if (o.range !== undefined) {
      const file = task.inputFile
      if (file === undefined) throw new StoreError('RO_BAD_OPTION', '--range needs the input file in mapreduce_map_input_file')
      const fileIndex = files.indexOf(file)
      for await (const l of rangeLines(file, o.range.start, o.range.end)) line(l.buf, l.start, l.end, l.offset, fileIndex, file)
    }
    const fixedFile = o.fileField ? undefined : task.inputFile
    let fileIndex = fixedFile === undefined ? -1 : files.indexOf(fixedFile)
    let file = fixedFile ?? ''
    while (o.range === undefined && reader.next()) {
      const { buf } = reader
      let s = reader.start
      const e = reader.end
      if (o.fileField) {
        const tab = buf.indexOf(TAB, s)
        if (tab < 0 || tab >= e)
          throw new StoreError('RO_BAD_INPUT', 'mapper input line without a file field (--file-field expects <file>\\t<offset>\\t<line>)')
        const name = buf.toString('utf8', s, tab)
        if (name !== file) {
          file = name
          fileIndex = files.indexOf(name)
        }
        s = tab + 1
      } else if (fileIndex < 0) {
        throw new StoreError(
          'RO_BAD_OPTION',
          'no input file: mapreduce_map_input_file is not set (not a FileInputFormat split? use --file-field)',
        )
      }
      const tab = buf.indexOf(TAB, s)
      const offset = tab >= 0 && tab < e ? parseOffset(buf, s, tab) : -1
      if (offset < 0)
        throw new StoreError(
          'RO_BAD_INPUT',
          `${file}: mapper input line does not start with a byte offset and a tab (run with -D stream.map.input.ignoreKey=false)`,
        )
      line(buf, tab + 1, e, offset, fileIndex, file)
    }
  }

  const stats: MapStats = {
    task: task.taskId,
    attempt: task.attemptId,
    records,
    kinds,
    files: [...positions].sort((a, b) => a[0] - b[0]).map(([fileIndex, p]): FilePositions => ({ fileIndex, ...p })),
    ...(job.compression === 'zstd' ? { valueBytes } : {}),
  }
  out.write(mapStatsLine(task.taskId, JSON.stringify(stats)))
  out.flush()
  if (process.env['mapreduce_task_attempt_id'] !== undefined)
    process.stderr.write(`reporter:counter:rostore,map input records,${records}\n`)
  return stats
}

/** Parquet and Arrow: each input line names a file, or row groups/record batches of one. */
async function mapFiles(
  job: HadoopJobSpec,
  reader: SyncLineReader,
  files: FileIndex,
  take: (rec: InputRecord, fileIndex: number) => void,
): Promise<void> {
  const cmd = hdfsCommand(job)
  while (reader.next()) {
    let line = reader.buf.toString('utf8', reader.start, reader.end).replace(/\r$/, '')
    // NLineInputFormat's key, the line's offset in the input list, when the job passes it.
    line = line.replace(/^\d+\t/, '')
    if (line.trim() === '') continue
    // A split of a file: "<first>-<end>\t<path>", row groups (Parquet) or record batches
    // (Arrow files). Paths in the list are absolute or URIs, so they never look like this.
    const range = /^(\d+)-(\d+)\t(.+)$/.exec(line)
    const file = range?.[3] ?? line
    const groups = range === null ? {} : { groupStart: Number(range[1]), groupEnd: Number(range[2]) }
    const fileIndex = files.indexOf(file)
    hadoopStatus(`reading ${line.replace('\t', ' of ')}`)
    // The Ray engine's tasks read s3:// objects themselves, by ranged GETs of the footer and the row groups.
    const { local, release } =
      job.s3Inputs === true && isS3Url(file) ? { local: file, release: async () => {} } : await fetchInput(cmd, file)
    try {
      for await (const rec of readInput(local, job.format, { keyField: job.keyField, valueField: job.valueField, ...groups }))
        take(rec, fileIndex)
    } finally {
      await release()
    }
  }
}

function parseOffset(buf: Buffer, s: number, e: number): number {
  if (e === s || e - s > 16) return -1
  let n = 0
  for (let i = s; i < e; i++) {
    const d = buf[i]! - 0x30
    if (d < 0 || d > 9) return -1
    n = n * 10 + d
  }
  return Number.isSafeInteger(n) ? n : -1
}

/** Input file name (as Hadoop reports it: a URI, maybe with another authority) -> file index. */
export class FileIndex {
  private readonly byPath = new Map<string, number>()

  constructor(private readonly inputs: readonly string[]) {
    inputs.forEach((p, i) => {
      if (!this.byPath.has(p)) this.byPath.set(p, i)
      const path = uriPath(p)
      if (!this.byPath.has(path)) this.byPath.set(path, i)
    })
  }

  indexOf(name: string): number {
    const i = this.byPath.get(name) ?? this.byPath.get(uriPath(name))
    if (i === undefined) {
      const shown = this.inputs.slice(0, 5).join(', ') + (this.inputs.length > 5 ? ', ...' : '')
      throw new StoreError(
        'RO_BAD_INPUT',
        `${name}: not one of the job's input files (${shown}); the input changed after the job was prepared?`,
      )
    }
    return i
  }
}
