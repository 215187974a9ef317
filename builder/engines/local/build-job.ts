import { mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { StoreError } from '../../../common/errors'
import { fsyncDir } from '../../../common/fs-durable'
import { inputSize } from '../../../formats/input/input-file'
import { listInputFiles } from '../../../formats/input/read-input'
import { planSplits } from '../../../formats/input/splits'
import { nodeDirName } from '../../../formats/store/layout/layout'
import { writeMetadata } from '../../../formats/store/layout/metadata-io'
import { writeDictionary } from '../../../formats/store/chunk/dictionary-file'
import type { FileEntry } from '../../../formats/store/layout/metadata'
import { buildDictionary, type DictionarySource } from '../../dictionary-training'
import { normalizeBuildOptions, type BuildOptions, type NormalizedBuildOptions, type OutputLayout } from '../../build-options'
import { nodeMetadata } from '../../node-metadata'
import { clusterLayout } from '../../../cluster/cluster'
import { buildRing } from '../../../cluster/routing'
import { defaultChunks } from '../../chunk-count'
import { bucketCount, bucketPlan, bucketTarget } from '../../bucket-plan'
import { versionManifest } from '../../version-manifest'
import { writeManifest } from '../../../formats/store/layout/manifest-io'
import { checkBase, keepPatches, readBaseBuild, withPatches, type PatchesWritten } from '../../partition-patches'
import { nodeView } from '../../../formats/store/layout/partition-files'
import type { SegmentRef } from '../../run-merge'
import type { SortedRun } from '../../sort-buffer'
import { addStageTimes, emptyStageTimes, type StageTimes } from '../../stage-times'
import { isS3Url } from '../../../s3/s3-url'
import { drain } from './drain'
import { PatchPhase } from './patch-phase'
import { progressTracker } from './progress-tracker'
import { WorkerHandle } from './worker-handle'
import type { KindCounts, ReducedChunk, WorkerSetup } from './worker-protocol'

export interface BuildSummary {
  /** The output directory, or the s3:// prefix the build was uploaded to. */
  readonly output: string
  readonly store: string
  readonly version: number
  /** Which output format the build wrote (build-options.ts). */
  readonly layout: OutputLayout
  /** Chunks per node (layout `nodes`) or per partition (layout `partitions`). */
  readonly chunks: number
  readonly inputRecords: number
  readonly inputBytes: number
  readonly duplicates: number
  /** Sorted runs spilled to disk (0 when the input fit in memory). */
  readonly runs: number
  readonly seconds: number
  /** Worker-thread seconds per stage, summed over the workers (builder/stage-times.ts). */
  readonly stages: StageTimes
  /** What each node holds: its own directory (format 1) or its view of the partitions (format 2). */
  readonly nodes: readonly { readonly nodeId: number; readonly records: number; readonly bytes: number }[]
  /** With --base: partitions that got a patch, the patches' bytes, and the seconds they took after the reduce (they start during it). */
  readonly patches?: PatchesWritten
  /** For an s3:// output: what the upload took. */
  readonly upload?: { readonly files: number; readonly bytes: number; readonly seconds: number }
}

const TMP_MARK = '.rostore-tmp-'

/**
 * map -> partition -> sort -> reduce on worker threads. Output goes to a hidden sibling
 * of `output` and is renamed into place only when complete, so a failed or killed build
 * leaves no output directory behind.
 */
export async function buildStore(options: BuildOptions): Promise<BuildSummary> {
  const o = normalizeBuildOptions(options)
  if (o.base !== undefined && isS3Url(o.base)) return buildOnObjectStorageBase(o, o.base)
  if (isS3Url(o.output)) return buildToObjectStorage(o)
  return buildLocally(o)
}

/**
 * `--base s3://...`: the base downloaded under --tmpdir (builder/s3-base.ts, every file
 * checked against its manifest), the build made against that copy, the copy removed.
 */
async function buildOnObjectStorageBase(o: NormalizedBuildOptions, base: string): Promise<BuildSummary> {
  // A local output that exists fails now, not after the download.
  if (!isS3Url(o.output)) await refuseExisting(resolve(o.output))
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { downloadBase } = require('../../s3-base') as typeof import('../../s3-base')
  const local = await downloadBase(base, o.tmpdir, o.signal)
  try {
    const onCopy = { ...o, base: local.dir }
    return await (isS3Url(o.output) ? buildToObjectStorage(onCopy) : buildLocally(onCopy))
  } finally {
    await local.remove()
  }
}

/**
 * The build made in a temp directory under --tmpdir, then uploaded under the s3:// prefix,
 * manifests last (builder/output-upload.ts). The prefix is checked before the build starts,
 * so a wrong bucket or credentials fail in a second, not after the whole build.
 */
async function buildToObjectStorage(o: NormalizedBuildOptions): Promise<BuildSummary> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const upload = require('../../output-upload') as typeof import('../../output-upload')
  await upload.checkS3Output(o.output)
  const local = await mkdtemp(join(o.tmpdir, 'rostore-s3-output-'))
  try {
    const built = await buildLocally({ ...o, output: join(local, 'out') })
    const uploaded = await upload.uploadBuildOutput(built.output, o.output, o.signal)
    return { ...built, output: o.output, seconds: built.seconds + uploaded.seconds, upload: uploaded }
  } finally {
    await rm(local, { recursive: true, force: true })
  }
}

async function buildLocally(o: NormalizedBuildOptions): Promise<BuildSummary> {
  const started = Date.now()
  const output = resolve(o.output)
  await refuseExisting(output)
  const files = await listInputFiles([...o.inputs], { requireSuccess: o.requireSuccess })
  const inputBytes = await totalSize(files)
  const layout = clusterLayout(o.cluster)
  const partitions = buildRing(layout).partitionCount
  const base = o.base === undefined ? undefined : await readBaseBuild(o.base)
  const chunks =
    o.chunks ?? base?.manifest.chunks ?? defaultChunks(o.layout, inputBytes, o.replication, { nodes: layout.length, partitions })
  const plan = bucketPlan(o.layout, layout, chunks)
  if (base !== undefined)
    checkBase(base, { store: o.store, version: o.version, keyHash: o.keyHash, compression: o.compression, partitions, chunks })

  await mkdir(dirname(output), { recursive: true })
  await removeStaleTemps(output)
  const tmpOut = `${join(dirname(output), `.${basename(output)}${TMP_MARK}`)}${process.pid}-${Date.now()}`
  await mkdir(tmpOut)
  let runDir: string | undefined
  const workers: WorkerHandle[] = []
  /** Threads that are not map and reduce workers (build --base's patcher). */
  const extra: WorkerHandle[] = []
  try {
    if (o.layout === 'nodes') for (const n of layout) await mkdir(join(tmpOut, nodeDirName(n.id)))
    const workerRuns = await mkdtemp(join(o.tmpdir, 'rostore-runs-'))
    runDir = workerRuns
    const progress = progressTracker(o, inputBytes)
    // Each reply carries its worker's cumulative stage times: the last one counts.
    const times: StageTimes[] = Array.from({ length: o.workers }, emptyStageTimes)
    // Chosen before any worker starts: every value is compressed with it in the map step.
    const chosen = await buildDictionary(o, files, base)
    const dictionary = chosen?.bytes
    const perWorker = Math.floor((o.memoryMb * (1 << 20)) / o.workers)
    const setupFor = (i: number): WorkerSetup => ({
      format: o.format,
      keyField: o.keyField,
      valueField: o.valueField,
      layout,
      replication: o.replication,
      output: o.layout,
      chunks,
      keyHash: o.keyHash,
      compression: o.compression,
      zstdLevel: o.zstdLevel,
      ...(dictionary ? { zstdDictionary: dictionary } : {}),
      onDuplicate: o.onDuplicate,
      files,
      runDir: workerRuns,
      sortBufferBytes: Math.max(256 << 10, Math.floor(perWorker * 0.6)),
      mergeBufferBytes: 64 << 10,
      workerId: i,
    })
    for (let i = 0; i < o.workers; i++) workers.push(new WorkerHandle(join(__dirname, 'build-worker.js'), setupFor(i), progress.add))

    // Map: splits are handed out one at a time so a slow split does not idle the others.
    const splits = await planSplits(files, o.format, Math.max(8 << 20, Math.ceil(inputBytes / (o.workers * 4))))
    const kinds: KindCounts = { keys: { string: 0, bytes: 0 }, values: { string: 0, json: 0, bytes: 0 } }
    let inputRecords = 0
    const valueBytes = { raw: 0, stored: 0 }
    await drain(workers, splits, o.signal, async (w, split) => {
      const r = await w.request({ type: 'map', split }, 'mapped')
      times[workers.indexOf(w)] = r.times
      inputRecords += r.records
      valueBytes.raw += r.valueBytes.raw
      valueBytes.stored += r.valueBytes.stored
      for (const k of ['string', 'bytes'] as const) kinds.keys[k] += r.kinds.keys[k]
      for (const k of ['string', 'json', 'bytes'] as const) kinds.values[k] += r.kinds.values[k]
      progress.splitDone(split.end !== undefined && split.start !== undefined ? split.end - split.start : 0)
    })
    const runs: SortedRun[] = []
    for (const [i, w] of workers.entries()) {
      const r = await w.request({ type: 'flush' }, 'flushed')
      runs.push(...r.runs)
      times[i] = r.times
    }

    // Reduce: every bucket, also empty ones, becomes a chunk.
    const segmentsByBucket = new Map<number, SegmentRef[]>()
    for (const run of runs)
      for (const segment of run.segments) {
        const list = segmentsByBucket.get(segment.bucket) ?? []
        list.push({ run, segment })
        segmentsByBucket.set(segment.bucket, list)
      }
    const total = bucketCount(plan)
    progress.startReduce(total)
    const reduced: ReducedChunk[] = []
    const buckets = Array.from({ length: total }, (_, b) => b)
    let phase: PatchPhase | undefined
    if (base !== undefined) {
      const patcher = new WorkerHandle(join(__dirname, 'build-worker.js'), setupFor(o.workers), progress.add)
      extra.push(patcher)
      phase = new PatchPhase(base, tmpOut, { chunks, dataVersion: o.version, keyHash: o.keyHash, partitions }, patcher, o.signal)
    }
    await drain(workers, buckets, o.signal, async (w, bucket) => {
      const target = bucketTarget(plan, bucket)
      const r = await w.request(
        {
          type: 'reduce',
          task: {
            target,
            dir: join(tmpOut, target.dir),
            store: o.store,
            version: o.version,
            segments: segmentsByBucket.get(bucket) ?? [],
          },
        },
        'reduced',
      )
      reduced.push(r.chunk)
      phase?.chunkDone(r.chunk)
      times[workers.indexOf(w)] = r.times
      progress.bucketDone()
    }).catch(async (err: unknown) => {
      await phase?.stop(err)
      throw err
    })
    const t0 = Date.now()
    const patched = await phase?.finish(workers)
    const patchSeconds = (Date.now() - t0) / 1000

    const metaOptions: typeof o & {
      clusterName: string
      dictionaryFile?: FileEntry
      dictionarySource?: DictionarySource
      valueBytes: typeof valueBytes
    } = {
      ...o,
      clusterName: o.cluster.name,
      valueBytes,
      ...(chosen ? { dictionarySource: chosen.source } : {}),
    }
    const nodes = []
    let patches: BuildSummary['patches']
    if (o.layout === 'partitions') {
      if (dictionary) metaOptions.dictionaryFile = await writeDictionary(tmpOut, dictionary)
      let manifest = versionManifest(metaOptions, chunks, layout, reduced, kinds)
      if (base !== undefined && patched !== undefined) {
        manifest = withPatches(base, manifest, patched)
        patches = await keepPatches(tmpOut, manifest, o.patchOnly === true, patchSeconds)
      }
      await writeManifest(tmpOut, manifest)
      for (const n of layout) {
        const view = nodeView(manifest, n.id)
        nodes.push({ nodeId: n.id, records: view.records, bytes: view.files.reduce((s, f) => s + f.size, 0) })
      }
    } else {
      for (const n of layout) {
        const mine = reduced.filter((r) => r.nodeId === n.id).sort((a, b) => a.chunk - b.chunk)
        const dir = join(tmpOut, nodeDirName(n.id))
        const dictionaryFile = dictionary ? await writeDictionary(dir, dictionary) : undefined
        const meta = nodeMetadata({ ...metaOptions, dictionaryFile }, chunks, n.id, layout, mine, kinds)
        await writeMetadata(dir, meta)
        await fsyncDir(dir)
        nodes.push({ nodeId: n.id, records: meta.records, bytes: mine.reduce((s, r) => s + r.indexSize + r.dataSize, 0) })
      }
    }
    await fsyncDir(tmpOut)
    await rename(tmpOut, output)
    await fsyncDir(dirname(output))
    const stages = emptyStageTimes()
    for (const t of times) addStageTimes(stages, t)
    return {
      output,
      store: o.store,
      version: o.version,
      layout: o.layout,
      chunks,
      inputRecords,
      inputBytes,
      // Format 1 writes (and so counts) every duplicate once per replica.
      duplicates: reduced.reduce((s, r) => s + r.duplicates, 0) / (o.layout === 'nodes' ? o.replication : 1),
      runs: runs.filter((r) => r.kind === 'file').length,
      seconds: (Date.now() - started) / 1000,
      stages,
      nodes,
      ...(patches !== undefined ? { patches } : {}),
    }
  } catch (err) {
    await rm(tmpOut, { recursive: true, force: true })
    throw err
  } finally {
    await Promise.all([...workers, ...extra].map((w) => w.terminate()))
    if (runDir) await rm(runDir, { recursive: true, force: true })
  }
}

/** A build never writes over an output: RO_BAD_OPTION when `output` exists. */
async function refuseExisting(output: string): Promise<void> {
  if (await exists(output)) throw new StoreError('RO_BAD_OPTION', `output ${output} already exists; choose a new directory`)
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  )
}

async function totalSize(files: readonly string[]): Promise<number> {
  let n = 0
  for (const f of files) n += await inputSize(f)
  return n
}

/** Temp outputs of builds that were killed: their pid no longer runs. */
async function removeStaleTemps(output: string): Promise<void> {
  const prefix = `.${basename(output)}${TMP_MARK}`
  for (const name of await readdir(dirname(output))) {
    if (!name.startsWith(prefix)) continue
    const pid = Number(name.slice(prefix.length).split('-')[0])
    if (!isAlive(pid)) await rm(join(dirname(output), name), { recursive: true, force: true })
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
