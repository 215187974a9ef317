import { join } from 'node:path'
import { parentPort, workerData } from 'node:worker_threads'
import { StoreError } from '../../../common/errors'
import { readRecordBatches } from '../../../formats/input/record-batch'
import type { InputSplit } from '../../../formats/input/splits'
import { createFileChecksummer } from '../../../formats/store/chunk/checksum'
import { ChunkWriter, chunkFileNames } from '../../../formats/store/chunk/chunk-writer'
import { createCodec } from '../../../formats/store/chunk/codec'
import { createKeyHasher, type KeyHasher } from '../../../formats/store/layout/key-hash'
import type { ChecksumAlgorithm } from '../../../formats/store/layout/metadata'
import { targetIdentity } from '../../bucket-plan'
import { MAPPED_HEADER_SIZE } from '../../mapped-record'
import { BatchMapper, type MappedSink } from '../../map-batch'
import { createMapContext, type MapContext } from '../../map-step'
import { reduceBucket } from '../../reduce-step'
import { writePartitionPatch, type PartitionPatchTask } from '../../partition-diff'
import { mergeSegments } from '../../run-merge'
import { SortBuffer, type SortedRun } from '../../sort-buffer'
import { emptyStageTimes, type StageTimes } from '../../stage-times'
import type { FromWorker, KindCounts, ReduceTask, ToWorker, WorkerSetup } from './worker-protocol'

/**
 * A build worker thread: maps splits into its sort buffer (spilling sorted runs), reduces
 * buckets into chunk files, and with --base diffs partitions into patches. Tasks arrive
 * one at a time from the build job.
 */
const setup = workerData as WorkerSetup
const port = parentPort
if (!port) throw new Error('build-worker must run in a worker thread')

const PROGRESS_EVERY = 20000
let ctx: MapContext | undefined
let buffer: SortBuffer | undefined
let mapper: BatchMapper | undefined
let checksummer: ((path: string) => string) | undefined
/** Seconds per stage in this thread, cumulative; sent with every reply. */
const times: StageTimes = emptyStageTimes()
const runs: SortedRun[] = []
let runSeq = 0

async function context(): Promise<MapContext> {
  ctx ??= createMapContext(
    setup.layout,
    setup.replication,
    setup.chunks,
    await createKeyHasher(setup.keyHash),
    createCodec(setup.compression, { dictionary: setup.zstdDictionary, level: setup.zstdLevel, forEncode: true }),
    setup.output,
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
  buffer ??= new SortBuffer(setup.sortBufferBytes, times)
  mapper ??= new BatchMapper(c)
  const rawBefore = mapper.rawValueBytes
  const storedBefore = mapper.storedValueBytes
  const buf = buffer
  const kinds: KindCounts = { keys: { string: 0, bytes: 0 }, values: { string: 0, json: 0, bytes: 0 } }
  let records = 0
  let sinceProgress = 0
  const sink: MappedSink = (bucket, hashes, hashAt, fileIndex, order, line, keySrc, ks, ke, valueSrc, vs, ve) => {
    if (buf.addRaw(bucket, hashes, hashAt, fileIndex, order, line, keySrc, ks, ke, valueSrc, vs, ve)) return
    const size = MAPPED_HEADER_SIZE + (ke - ks) + (ve - vs)
    if (!buf.fitsEmpty(size)) {
      // A record larger than the whole buffer becomes a run of its own.
      const single = new SortBuffer(size * 2, times)
      single.addRaw(bucket, hashes, hashAt, fileIndex, order, line, keySrc, ks, ke, valueSrc, vs, ve)
      runs.push(single.spill(nextRunPath()))
      return
    }
    spill()
    buf.addRaw(bucket, hashes, hashAt, fileIndex, order, line, keySrc, ks, ke, valueSrc, vs, ve)
  }
  const batches = readRecordBatches(split.path, setup.format, {
    keyField: setup.keyField,
    valueField: setup.valueField,
    start: split.start,
    end: split.end,
    groupStart: split.groupStart,
    groupEnd: split.groupEnd,
  })
  // Stage clocks per batch, not per record: reading (parse) and mapping into the buffer
  // (map, which includes spilling: its sort and write are counted apart and taken out).
  let t = process.hrtime.bigint()
  for await (const batch of batches) {
    const t1 = process.hrtime.bigint()
    times.parse += Number(t1 - t) / 1e9
    const spillBefore = times.sort + times.spill
    // Values stored as read, or encoded for the whole batch in one call (zstd).
    const whole = mapper.plain ? batch : mapper.encode(batch)
    if (whole !== undefined) {
      // Whole batches into the sort buffer; an entry that does not fit takes the sink's way
      // (spill, or a run of its own), then the rest of the batch goes on in bulk.
      const m = mapper.plan(whole)
      const { hashes, entryRecord, entryBucket } = mapper
      let j = 0
      while (j < m) {
        j = buf.addEntries(whole, hashes, split.fileIndex, entryRecord, entryBucket, j, m)
        if (j === m) break
        const r = entryRecord[j]!
        const { buf: src, keyStart, keyEnd, valueStart, valueEnd } = whole
        sink(
          entryBucket[j]!,
          hashes,
          16 * r,
          split.fileIndex,
          whole.order[r]!,
          whole.line[r]!,
          src,
          keyStart[r]!,
          keyEnd[r]!,
          src,
          valueStart[r]!,
          valueEnd[r]!,
        )
        j++
      }
    } else {
      mapper.map(batch, split.fileIndex, sink)
    }
    t = process.hrtime.bigint()
    times.map += Number(t - t1) / 1e9 - (times.sort + times.spill - spillBefore)
    for (const k of ['string', 'bytes'] as const) kinds.keys[k] += batch.kinds.keys[k]
    for (const k of ['string', 'json', 'bytes'] as const) kinds.values[k] += batch.kinds.values[k]
    records += batch.count
    sinceProgress += batch.count
    if (sinceProgress >= PROGRESS_EVERY) {
      post({ type: 'progress', records: sinceProgress, bytes: 0 })
      sinceProgress = 0
    }
  }
  times.parse += Number(process.hrtime.bigint() - t) / 1e9
  if (sinceProgress > 0) post({ type: 'progress', records: sinceProgress, bytes: 0 })
  const valueBytes = { raw: mapper.rawValueBytes - rawBefore, stored: mapper.storedValueBytes - storedBefore }
  post({ type: 'mapped', records, kinds, times: { ...times }, valueBytes })
}

async function reduce(task: ReduceTask): Promise<void> {
  const identity = targetIdentity(task.target, task.store, task.version)
  const writer = new ChunkWriter(task.dir, identity, (await context()).codec.id)
  let result
  const t0 = process.hrtime.bigint()
  try {
    const stable = task.segments.every((s) => s.run.kind === 'memory')
    result = reduceBucket(mergeSegments(task.segments, setup.mergeBufferBytes), writer, setup.onDuplicate, describeSource, stable)
  } catch (err) {
    writer.close()
    throw err
  }
  const stats = writer.finish()
  const t1 = process.hrtime.bigint()
  // Checksums are taken from the finished files (headers included), just written and
  // so still in the page cache.
  checksummer ??= await createFileChecksummer()
  const names = chunkFileNames(identity)
  const indexChecksum = checksummer(join(task.dir, names.index))
  const dataChecksum = checksummer(join(task.dir, names.data))
  const t2 = process.hrtime.bigint()
  times.write += stats.writeSeconds
  times.fsync += stats.fsyncSeconds
  times.merge += Number(t1 - t0) / 1e9 - stats.writeSeconds - stats.fsyncSeconds
  times.checksum += Number(t2 - t1) / 1e9
  post({
    type: 'reduced',
    chunk: {
      bucket: task.target.bucket,
      ...(task.target.nodeId !== undefined ? { nodeId: task.target.nodeId } : {}),
      ...(task.target.partition !== undefined ? { partition: task.target.partition } : {}),
      chunk: task.target.chunk,
      records: result.records,
      duplicates: result.duplicates,
      indexSize: stats.indexSize,
      dataSize: stats.dataSize,
      indexChecksum,
      dataChecksum,
    },
    times: { ...times },
  })
}

let patchTools: { hasher: KeyHasher; algorithm: ChecksumAlgorithm; checksum: (path: string) => string } | undefined

async function patch(task: PartitionPatchTask): Promise<void> {
  if (patchTools?.algorithm !== task.checksumAlgorithm)
    patchTools = {
      hasher: await createKeyHasher(task.keyHash),
      algorithm: task.checksumAlgorithm,
      checksum: await createFileChecksummer(task.checksumAlgorithm),
    }
  const written = writePartitionPatch(task, patchTools.hasher, patchTools.checksum)
  post({ type: 'patched', ...(written !== undefined ? { patch: written } : {}) })
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
      post({ type: 'flushed', runs: runs.splice(0), times: { ...times } })
      return
    case 'reduce':
      return reduce(m.task)
    case 'patch':
      return patch(m.task)
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
