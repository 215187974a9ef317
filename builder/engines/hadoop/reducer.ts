import { join } from 'node:path'
import { StoreError } from '../../../common/errors'
import { checksumFile } from '../../../formats/store/chunk/checksum'
import { ChunkWriter, chunkFileNames } from '../../../formats/store/chunk/chunk-writer'
import { codecByName } from '../../../formats/store/chunk/codec'
import { clusterLayout } from '../../../cluster/cluster'
import { bucketCount, bucketPlan, bucketTarget, targetIdentity, type BucketTarget } from '../../bucket-plan'
import type { MappedRecord } from '../../mapped-record'
import { reduceBucket } from '../../reduce-step'
import { streamOfRecords } from '../../mapped-stream'
import { outputLocation, type OutputLocation } from './output-location'
import type { HadoopJobSpec } from './job-spec'
import { atOffset } from './line-records'
import { lineBucket, parseMapStatsLine, parseShuffleLine, shuffleKeyLength } from './shuffle-key'
import { chunkStatsLine, mapStatsOutputLine, type ChunkStats } from './stats'
import { SyncLineReader, SyncWriter } from './streaming-io'
import { hadoopStatus, taskEnv } from './task-env'

/**
 * `rostore hadoop reduce`: the Streaming reducer. stdin holds shuffle lines sorted by key,
 * all of a bucket together (any number of buckets in a row), then the map statistics
 * lines routed here. Each bucket goes through the shared reduce step (reduceBucket) into
 * a ChunkWriter writing under the attempt's own directory; the finished files are then
 * committed (renamed into `<output>/node-<id>/`, or `<output>/` for partition files) and
 * the chunk's statistics line printed.
 * Map statistics lines are passed through for finalize.
 */
export interface ReduceTaskOptions {
  readonly job: HadoopJobSpec
  readonly env?: NodeJS.ProcessEnv
  readonly input?: number
  readonly output?: number
}

export interface ReduceTaskSummary {
  readonly chunks: readonly ChunkStats[]
  readonly mapStats: number
}

export async function runReduceTask(o: ReduceTaskOptions): Promise<ReduceTaskSummary> {
  const job = o.job
  const task = taskEnv(o.env ?? process.env)
  const location = outputLocation(job.output, job)
  const plan = bucketPlan(job.layout ?? 'nodes', clusterLayout(job.cluster), job.chunks)
  const buckets = bucketCount(plan)
  const codec = codecByName(job.compression)
  const reader = new SyncLineReader(o.input ?? 0)
  const out = new SyncWriter(o.output ?? 1)
  const order = new OrderCheck()
  const chunks: ChunkStats[] = []
  let mapStats = 0
  const columnar = job.format === 'parquet' || job.format === 'arrow'
  const describeSource = (fileIndex: number, position: number): string => {
    const file = job.inputs[fileIndex] ?? `input #${fileIndex}`
    return columnar ? `${file} row ${position}` : atOffset(file, position)
  }

  let more = reader.next()
  while (more) {
    const { buf, start, end } = reader
    if (start === end) {
      more = reader.next()
      continue
    }
    const stats = parseMapStatsLine(buf, start, end)
    if (stats !== undefined) {
      out.write(mapStatsOutputLine(stats))
      mapStats++
      more = reader.next()
      continue
    }
    const bucket = lineBucket(buf, start, end)
    if (bucket < 0) parseShuffleLine(buf, start, end) // throws, naming the line
    if (bucket >= buckets)
      throw new StoreError(
        'RO_BAD_INPUT',
        `bucket ${bucket} does not exist: the job has ${buckets} buckets of ${job.chunks} chunks (was the job prepared with another cluster or chunk count?)`,
      )
    const target = bucketTarget(plan, bucket)
    const records = function* (): Generator<MappedRecord> {
      while (more && lineBucket(reader.buf, reader.start, reader.end) === bucket) {
        order.check(reader.buf, reader.start, reader.end)
        yield parseShuffleLine(reader.buf, reader.start, reader.end)
        more = reader.next()
      }
    }
    const c = await writeChunk(location, task.attemptId, job, target, codec.id, records(), describeSource)
    chunks.push(c)
    out.write(chunkStatsLine(c))
    // Flushed per chunk: the line is the only record of a committed chunk a rerun can rely on.
    out.flush()
  }
  out.flush()
  // Hadoop Streaming counters (stderr lines with the reporter: prefix), when under Hadoop.
  if (process.env['mapreduce_task_attempt_id'] !== undefined) {
    process.stderr.write(
      `reporter:counter:rostore,chunks written,${chunks.length}\nreporter:counter:rostore,records written,${chunks.reduce((s, c) => s + c.records, 0)}\n`,
    )
  }
  return { chunks, mapStats }
}

async function writeChunk(
  location: OutputLocation,
  attempt: string,
  job: HadoopJobSpec,
  target: BucketTarget,
  codecId: number,
  records: Iterable<MappedRecord>,
  describeSource: (fileIndex: number, position: number) => string,
): Promise<ChunkStats> {
  const identity = targetIdentity(target, job.store, job.version)
  const dir = await location.stage(attempt, target.dir)
  const writer = new ChunkWriter(dir, identity, codecId)
  let result
  try {
    result = reduceBucket(streamOfRecords(records), writer, job.onDuplicate, describeSource)
  } catch (err) {
    writer.close()
    throw err
  }
  const stats = writer.finish()
  const { index, data } = chunkFileNames(identity)
  const names = [index, data]
  const [indexChecksum, dataChecksum] = await Promise.all(names.map((n) => checksumFile(join(dir, n))))
  hadoopStatus(`committing ${[target.dir, index].filter((s) => s !== '').join('/')}: ${result.records} records`)
  await location.commit(dir, attempt, target.dir, names)
  return {
    bucket: target.bucket,
    ...(target.nodeId !== undefined ? { nodeId: target.nodeId } : {}),
    ...(target.partition !== undefined ? { partition: target.partition } : {}),
    chunk: target.chunk,
    records: result.records,
    duplicates: result.duplicates,
    indexSize: stats.indexSize,
    dataSize: stats.dataSize,
    indexChecksum: indexChecksum!,
    dataChecksum: dataChecksum!,
    attempt,
  }
}

/** Shuffle keys must arrive strictly increasing: anything else means a misconfigured job. */
class OrderCheck {
  private prev = Buffer.alloc(256)
  private prevLength = -1

  check(buf: Buffer, s: number, e: number): void {
    const n = shuffleKeyLength(buf, s, e)
    if (n < 0) return
    const key = buf.subarray(s, s + n)
    if (this.prevLength >= 0 && Buffer.compare(this.prev.subarray(0, this.prevLength), key) >= 0) {
      throw new StoreError(
        'RO_BAD_INPUT',
        `reducer input is not sorted by key (or holds a line twice) at ${JSON.stringify(key.toString('latin1').slice(0, 80))}: the job must sort map output keys as bytes (Hadoop's default Text order, LC_ALL=C sort)`,
      )
    }
    if (this.prev.length < n) this.prev = Buffer.alloc(Math.max(n, this.prev.length * 2))
    key.copy(this.prev, 0)
    this.prevLength = n
  }
}
