import { readdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../../common/errors'
import { fsyncDir } from '../../../common/fs-durable'
import { checksumFile } from '../../../formats/store/chunk/checksum'
import { ChunkWriter } from '../../../formats/store/chunk/chunk-writer'
import { codecByName } from '../../../formats/store/chunk/codec'
import { DICTIONARY_FILE, writeDictionary } from '../../../formats/store/chunk/dictionary-file'
import { nodeDirName } from '../../../formats/store/layout/layout'
import { writeManifest } from '../../../formats/store/layout/manifest-io'
import { METADATA_FILE } from '../../../formats/store/layout/metadata'
import { writeMetadata } from '../../../formats/store/layout/metadata-io'
import { nodeView } from '../../../formats/store/layout/partition-files'
import { verifyBuildOrNode } from '../../../formats/store/scan/verify-tree'
import { clusterLayout } from '../../../cluster/cluster'
import { bucketCount, bucketPlan, bucketTarget, sameTarget, targetFileNames, targetIdentity, type BucketPlan } from '../../bucket-plan'
import { nodeMetadata, type MetadataOptions } from '../../node-metadata'
import { versionManifest } from '../../version-manifest'
import type { OutputLayout } from '../../build-options'
import { outputLocation, type OutputLocation } from './output-location'
import { specBuildOptions, specDictionary, type HadoopJobSpec } from './job-spec'
import { atOffset } from './line-records'
import { addKinds, emptyKinds, parseStatsText, type ChunkStats, type MapStats, type ParsedStats } from './stats'

/**
 * `rostore hadoop finalize`: turns the chunk files the reducers committed plus their
 * statistics lines into a normal build output, byte for byte what `rostore build` writes:
 * checks the statistics add up (every mapped record reached a chunk), writes an empty
 * chunk for every bucket no reducer saw, writes each node's metadata.json (format 1) or the
 * version manifest (format 2) with the same function the local engine uses, removes the
 * attempt directories, and checks that the output holds exactly the files the metadata lists.
 */
export interface FinalizeOptions {
  readonly job: HadoopJobSpec
  readonly stats: ParsedStats
  /** Also walk every record of the output (local output only), as `rostore verify` does. */
  readonly verify?: boolean
}

export interface FinalizeSummary {
  readonly output: string
  readonly store: string
  readonly version: number
  readonly layout: OutputLayout
  /** Per node (layout `nodes`) or per partition (layout `partitions`). */
  readonly chunks: number
  readonly inputRecords: number
  readonly duplicates: number
  readonly mapTasks: number
  readonly emptyChunks: number
  readonly nodes: readonly { readonly nodeId: number; readonly records: number; readonly bytes: number }[]
}

const FINALIZE_ATTEMPT = 'finalize'

export async function finalizeHadoopBuild(o: FinalizeOptions): Promise<FinalizeSummary> {
  const job = o.job
  const opts = specBuildOptions(job)
  const layout = clusterLayout(job.cluster)
  const plan = bucketPlan(opts.layout, layout, job.chunks)
  const buckets = bucketCount(plan)
  const location = outputLocation(job.output, job)

  const byBucket = chunksByBucket(o.stats.chunks, plan, buckets)
  const maps = distinctMaps(o.stats.maps)
  const kinds = emptyKinds()
  let inputRecords = 0
  for (const m of maps) {
    addKinds(kinds, m.kinds)
    inputRecords += m.records
  }
  checkBlankLines(job, maps)
  const reached = [...byBucket.values()].reduce((s, c) => s + c.records + c.duplicates, 0)
  // Format 1 writes a copy per replica; format 2 each record once.
  const copies = plan.layout === 'nodes' ? job.replication : 1
  if (reached !== inputRecords * copies) {
    throw new StoreError(
      'RO_CONFLICT',
      `statistics do not add up: ${maps.length} map tasks read ${inputRecords} records (x${copies} copies = ${inputRecords * copies}), the reducers' chunks hold ${reached}; ` +
        'give finalize the complete output of one successful job (every part-* file)',
    )
  }

  // Buckets no reducer saw get the same empty chunk the local engine writes.
  const codec = codecByName(job.compression)
  let emptyChunks = 0
  for (let bucket = 0; bucket < buckets; bucket++) {
    if (byBucket.has(bucket)) continue
    const target = bucketTarget(plan, bucket)
    const dir = await location.stage(FINALIZE_ATTEMPT, target.dir)
    const stats = new ChunkWriter(dir, targetIdentity(target, job.store, job.version), codec.id).finish()
    const { index, data } = targetFileNames(target)
    const names = [index, data]
    const [indexChecksum, dataChecksum] = await Promise.all(names.map((n) => checksumFile(join(dir, n))))
    await location.commit(dir, FINALIZE_ATTEMPT, target.dir, names)
    byBucket.set(bucket, {
      bucket,
      ...(target.nodeId !== undefined ? { nodeId: target.nodeId } : {}),
      ...(target.partition !== undefined ? { partition: target.partition } : {}),
      chunk: target.chunk,
      records: 0,
      duplicates: 0,
      indexSize: stats.indexSize,
      dataSize: stats.dataSize,
      indexChecksum: indexChecksum!,
      dataChecksum: dataChecksum!,
      attempt: FINALIZE_ATTEMPT,
    })
    emptyChunks++
  }

  const dictionary = specDictionary(job)
  const metaOptions: FinalizeMetadataOptions = {
    ...opts,
    clusterName: job.cluster.name,
    ...(job.compression === 'zstd' ? { valueBytes: sumValueBytes(maps) } : {}),
    ...(dictionary !== undefined ? { dictionaryBytes: dictionary, dictionarySource: job.zstdDictionarySource ?? 'trained' } : {}),
  }
  const all = [...byBucket.values()]
  const write = plan.layout === 'partitions' ? writePartitionsMetadata : writeNodesMetadata
  const { nodes: summaryNodes, expected } = await write(location, metaOptions, plan, layout, all, kinds)
  await location.removeAttempts()
  const extra = (await location.children()).filter((name) => !expected.has(name))
  if (extra.length > 0)
    throw new StoreError('RO_CONFLICT', `${location.root}: unexpected entries beside the build's files: ${extra.join(', ')}`)
  if (o.verify) {
    if (location.remote)
      throw new StoreError('RO_BAD_OPTION', '--verify needs a local (or mounted) output; copy it with hdfs dfs -get and run rostore verify')
    await verifyBuildOrNode(location.root)
  }
  return {
    output: location.root,
    store: job.store,
    version: job.version,
    layout: plan.layout,
    chunks: job.chunks,
    inputRecords,
    duplicates: [...byBucket.values()].reduce((s, c) => s + c.duplicates, 0) / copies,
    mapTasks: maps.length,
    emptyChunks,
    nodes: summaryNodes,
  }
}

type SummaryNode = FinalizeSummary['nodes'][number]

/** The metadata's options, and the zstd dictionary to write beside it. */
type FinalizeMetadataOptions = MetadataOptions & { readonly dictionaryBytes?: Buffer }

/** Format 1: every node's metadata.json (each in its directory); returns the root's expected entries. */
async function writeNodesMetadata(
  location: OutputLocation,
  o: FinalizeMetadataOptions,
  plan: BucketPlan,
  layout: ReturnType<typeof clusterLayout>,
  all: readonly ChunkStats[],
  kinds: ReturnType<typeof emptyKinds>,
): Promise<{ nodes: SummaryNode[]; expected: Set<string> }> {
  const nodes: SummaryNode[] = []
  for (const nodeId of plan.nodeIds) {
    const mine = all.filter((c) => c.nodeId === nodeId).sort((a, b) => a.chunk - b.chunk)
    const nodeDir = nodeDirName(nodeId)
    await checkCommitted(location, nodeDir, mine)
    const dir = location.remote ? await location.stage(FINALIZE_ATTEMPT, nodeDir) : join(location.root, nodeDir)
    const dictionaryFile = o.dictionaryBytes !== undefined ? await writeDictionary(dir, o.dictionaryBytes) : undefined
    const meta = nodeMetadata({ ...o, dictionaryFile }, plan.chunks, nodeId, layout, mine, kinds)
    await writeMetadata(dir, meta)
    const names = dictionaryFile !== undefined ? [DICTIONARY_FILE, METADATA_FILE] : [METADATA_FILE]
    if (location.remote) await location.commit(dir, FINALIZE_ATTEMPT, nodeDir, names)
    else await fsyncDir(dir)
    nodes.push({ nodeId, records: meta.records, bytes: mine.reduce((s, c) => s + c.indexSize + c.dataSize, 0) })
  }
  return { nodes, expected: new Set(plan.nodeIds.map(nodeDirName)) }
}

/** Format 2: the version manifest as the root's metadata.json; returns the root's expected entries. */
async function writePartitionsMetadata(
  location: OutputLocation,
  o: FinalizeMetadataOptions,
  plan: BucketPlan,
  layout: ReturnType<typeof clusterLayout>,
  all: readonly ChunkStats[],
  kinds: ReturnType<typeof emptyKinds>,
): Promise<{ nodes: SummaryNode[]; expected: Set<string> }> {
  await checkCommitted(location, '', all)
  const dir = location.remote ? await location.stage(FINALIZE_ATTEMPT, '') : location.root
  const dictionaryFile = o.dictionaryBytes !== undefined ? await writeDictionary(dir, o.dictionaryBytes) : undefined
  const manifest = versionManifest({ ...o, dictionaryFile }, plan.chunks, layout, all, kinds)
  await writeManifest(dir, manifest)
  const names = dictionaryFile !== undefined ? [DICTIONARY_FILE, METADATA_FILE] : [METADATA_FILE]
  if (location.remote) await location.commit(dir, FINALIZE_ATTEMPT, '', names)
  else await fsyncDir(location.root)
  const nodes = plan.nodeIds.map((nodeId) => {
    const view = nodeView(manifest, nodeId)
    return { nodeId, records: view.records, bytes: view.files.reduce((s, f) => s + f.size, 0) }
  })
  const expected = new Set([
    METADATA_FILE,
    ...(dictionaryFile !== undefined ? [DICTIONARY_FILE] : []),
    ...manifest.partitionFiles.flatMap((p) => p.files.map((f) => f.name)),
  ])
  return { nodes, expected }
}

/** The maps' value bytes before and after compression (zstd jobs). */
function sumValueBytes(maps: readonly MapStats[]): { raw: number; stored: number } {
  const sum = { raw: 0, stored: 0 }
  for (const m of maps) {
    if (m.valueBytes === undefined)
      throw new StoreError('RO_CONFLICT', `map ${m.task} has no value byte counts: statistics of another job?`)
    sum.raw += m.valueBytes.raw
    sum.stored += m.valueBytes.stored
  }
  return sum
}

function chunksByBucket(list: readonly ChunkStats[], plan: BucketPlan, buckets: number): Map<number, ChunkStats> {
  const byBucket = new Map<number, ChunkStats>()
  for (const c of list) {
    if (c.bucket >= buckets)
      throw new StoreError('RO_CONFLICT', `statistics name bucket ${c.bucket}, the job has ${buckets}: statistics of another job?`)
    if (!sameTarget(bucketTarget(plan, c.bucket), c))
      throw new StoreError('RO_CONFLICT', `statistics of bucket ${c.bucket} name ${describeChunk(c)}: statistics of another job?`)
    const prev = byBucket.get(c.bucket)
    if (prev !== undefined) {
      if (prev.indexChecksum === c.indexChecksum && prev.dataChecksum === c.dataChecksum && prev.records === c.records) continue
      throw new StoreError(
        'RO_CONFLICT',
        `${describeChunk(c)} was written by two reducers with different contents (${prev.attempt}, ${c.attempt}): ` +
          'the job must partition on the first key field only (-partitioner KeyFieldBasedPartitioner, -k1,1, separator ".")',
      )
    }
    byBucket.set(c.bucket, c)
  }
  return byBucket
}

/** One entry per map task (the same task given twice, identical, counts once). */
function distinctMaps(list: readonly MapStats[]): MapStats[] {
  const byTask = new Map<string, MapStats>()
  for (const m of list) {
    const prev = byTask.get(m.task)
    if (prev === undefined) byTask.set(m.task, m)
    else if (JSON.stringify({ ...prev, attempt: '' }) !== JSON.stringify({ ...m, attempt: '' })) {
      throw new StoreError('RO_CONFLICT', `map task ${m.task} reported twice with different statistics: statistics of two jobs?`)
    }
  }
  return [...byTask.values()]
}

/** Blank lines are allowed only at the end of a file: none may come before a non-blank line of any split. */
function checkBlankLines(job: HadoopJobSpec, maps: readonly MapStats[]): void {
  const firstBlank = new Map<number, number>()
  const lastLine = new Map<number, number>()
  for (const m of maps) {
    for (const f of m.files) {
      if (f.firstBlank !== null) firstBlank.set(f.fileIndex, Math.min(firstBlank.get(f.fileIndex) ?? Infinity, f.firstBlank))
      if (f.lastLine !== null) lastLine.set(f.fileIndex, Math.max(lastLine.get(f.fileIndex) ?? -1, f.lastLine))
    }
  }
  for (const [fileIndex, blank] of firstBlank) {
    if (blank < (lastLine.get(fileIndex) ?? -1))
      throw new StoreError('RO_BAD_INPUT', `${atOffset(job.inputs[fileIndex] ?? `input #${fileIndex}`, blank)}: empty line`)
  }
}

function describeChunk(c: ChunkStats): string {
  return c.partition !== undefined ? `partition ${c.partition} chunk ${c.chunk}` : `node ${String(c.nodeId)} chunk ${c.chunk}`
}

/** `dir` ('' = the root) holds exactly the chunk files of `mine`, with the sizes the reducers reported. */
async function checkCommitted(location: OutputLocation, dir: string, mine: readonly ChunkStats[]): Promise<void> {
  const present = await location.list(dir)
  const where = dir === '' ? location.root : `${location.root}/${dir}`
  for (const c of mine) {
    const { index, data } = targetFileNames(c)
    for (const [name, size] of [
      [index, c.indexSize],
      [data, c.dataSize],
    ] as const) {
      const got = present.get(name)
      if (got === undefined) throw new StoreError('RO_CORRUPT', `${where}/${name}: missing, though a reducer reported it committed`)
      if (got !== size) throw new StoreError('RO_CORRUPT', `${where}/${name}: ${got} bytes, the reducer reported ${size}`)
      present.delete(name)
    }
  }
  present.delete(METADATA_FILE)
  if (present.size > 0)
    throw new StoreError('RO_CONFLICT', `${where}: files no chunk statistics account for: ${[...present.keys()].join(', ')}`)
}

/**
 * Statistics from reducer output: files, directories (every file in them not starting
 * with '_' or '.', as Hadoop reads a job's output) or '-' for stdin.
 */
export async function readStatsSources(sources: readonly string[], stdin: () => Promise<string>): Promise<ParsedStats> {
  const into: ParsedStats = { chunks: [], maps: [] }
  for (const src of sources) {
    if (src === '-') {
      parseStatsText(await stdin(), 'stdin', into)
      continue
    }
    const info = await stat(src).catch((err: unknown) => {
      throw new StoreError('RO_NOT_FOUND', `${src}: cannot read statistics: ${(err as Error).message}`, { cause: err })
    })
    const files = info.isDirectory()
      ? (await readdir(src))
          .filter((n) => !n.startsWith('_') && !n.startsWith('.'))
          .sort()
          .map((n) => join(src, n))
      : [src]
    for (const f of files) parseStatsText(await readFile(f, 'utf8'), f, into)
  }
  return into
}
