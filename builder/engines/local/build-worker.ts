import { join } from 'node:path'
import { parentPort, workerData } from 'node:worker_threads'
import { StoreError } from '../../../common/errors'
import { readInput } from '../../../formats/input/read-input'
import type { InputSplit } from '../../../formats/input/splits'
import { checksumFile } from '../../../formats/store/checksum'
import { ChunkWriter } from '../../../formats/store/chunk-writer'
import { codecByName } from '../../../formats/store/codec'
import { createKeyHasher } from '../../../formats/store/key-hash'
import { dataFileName, indexFileName } from '../../../formats/store/layout'
import { mappedSize, type MappedRecord } from '../../mapped-record'
import { createMapContext, mapRecord, type MapContext } from '../../map-step'
import { reduceBucket } from '../../reduce-step'
import { mergeSegments } from '../../run-merge'
import { SortBuffer, type SortedRun } from '../../sort-buffer'
import type { FromWorker, KindCounts, ReduceTask, ToWorker, WorkerSetup } from './worker-protocol'

/**
 * A build worker thread: maps splits into its sort buffer (spilling sorted runs), and
 * reduces buckets into chunk files. Tasks arrive one at a time from the build job.
 */
const setup = workerData as WorkerSetup
const port = parentPort
if (!port) throw new Error('build-worker must run in a worker thread')

const PROGRESS_EVERY = 20000
let ctx: MapContext | undefined
let buffer: SortBuffer | undefined
const runs: SortedRun[] = []
let runSeq = 0

async function context(): Promise<MapContext> {
  ctx ??= createMapContext(
    setup.layout,
    setup.replication,
    setup.chunks,
    await createKeyHasher(setup.keyHash),
    codecByName(setup.compression),
  )
  return ctx
}

function nextRunPath(): string {
  return join(setup.runDir, `w${setup.workerId}-run${runSeq++}.bin`)
}

function spill(): void {
  if (buffer && buffer.size > 0) runs.push(buffer.spill(nextRunPath()))
}

async function mapSplit(split: InputSplit): Promise<void> {
  const c = await context()
  buffer ??= new SortBuffer(setup.sortBufferBytes)
  const buf = buffer
  const kinds: KindCounts = { keys: { string: 0, bytes: 0 }, values: { string: 0, json: 0, bytes: 0 } }
  let records = 0
  let sinceProgress = 0
  const emit = (m: MappedRecord): void => {
    if (buf.add(m)) return
    if (!buf.fitsEmpty(mappedSize(m))) {
      // A record larger than the whole buffer becomes a run of its own.
      const single = new SortBuffer(mappedSize(m) * 2)
      single.add(m)
      runs.push(single.spill(nextRunPath()))
      return
    }
    spill()
    buf.add(m)
  }
  for await (const rec of readInput(split.path, setup.format, {
    keyField: setup.keyField,
    valueField: setup.valueField,
    start: split.start,
    end: split.end,
    groupStart: split.groupStart,
    groupEnd: split.groupEnd,
  })) {
    mapRecord(rec, split.fileIndex, c, emit)
    kinds.keys[rec.keyKind]++
    kinds.values[rec.valueKind]++
    records++
    if (++sinceProgress === PROGRESS_EVERY) {
      post({ type: 'progress', records: sinceProgress, bytes: 0 })
      sinceProgress = 0
    }
  }
  if (sinceProgress > 0) post({ type: 'progress', records: sinceProgress, bytes: 0 })
  post({ type: 'mapped', records, kinds })
}

async function reduce(task: ReduceTask): Promise<void> {
  const writer = new ChunkWriter(
    task.dir,
    { store: task.store, version: task.version, nodeId: task.nodeId, chunk: task.chunk },
    codecByName(setup.compression).id,
  )
  let result
  try {
    const stable = task.segments.every((s) => s.run.kind === 'memory')
    result = reduceBucket(mergeSegments(task.segments, setup.mergeBufferBytes), writer, setup.onDuplicate, describeSource, stable)
  } catch (err) {
    writer.close()
    throw err
  }
  const stats = writer.finish()
  // Checksums are taken from the finished files (headers included), just written and
  // so still in the page cache.
  const [indexChecksum, dataChecksum] = await Promise.all([
    checksumFile(join(task.dir, indexFileName(task.chunk))),
    checksumFile(join(task.dir, dataFileName(task.chunk))),
  ])
  post({
    type: 'reduced',
    chunk: {
      bucket: task.bucket,
      nodeId: task.nodeId,
      chunk: task.chunk,
      records: result.records,
      duplicates: result.duplicates,
      indexSize: stats.indexSize,
      dataSize: stats.dataSize,
      indexChecksum,
      dataChecksum,
    },
  })
}

function describeSource(fileIndex: number, line: number): string {
  const file = setup.files[fileIndex] ?? `input #${fileIndex}`
  return setup.format === 'parquet' || setup.format === 'arrow' ? `${file} row ${line}` : `${file}:${line}`
}

function post(m: FromWorker): void {
  port!.postMessage(m)
}

async function handle(m: ToWorker): Promise<void> {
  switch (m.type) {
    case 'map':
      return mapSplit(m.split)
    case 'flush':
      // What is still buffered stays in shared memory for the reducers.
      if (buffer && buffer.size > 0) runs.push(buffer.toMemoryRun())
      buffer = undefined
      post({ type: 'flushed', runs: runs.splice(0) })
      return
    case 'reduce':
      return reduce(m.task)
  }
}

port.on('message', (m: ToWorker) => {
  handle(m).catch((err: unknown) => {
    post({
      type: 'error',
      code: err instanceof StoreError ? err.code : undefined,
      message: err instanceof Error ? err.message : String(err),
    })
  })
})
