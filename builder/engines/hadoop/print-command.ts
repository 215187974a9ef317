import { mkdir, stat, writeFile } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
import { StoreError } from '../../../common/errors'
import { listInputFiles } from '../../../formats/input/read-input'
import { planSplits } from '../../../formats/input/splits'
import { normalizeBuildOptions, type BuildOptions, type NormalizedBuildOptions } from '../../build-options'
import { buildDictionary, type BuildDictionary } from '../../dictionary-training'
import { bucketCount, bucketPlan } from '../../bucket-plan'
import { defaultChunks } from '../../chunk-count'
import { clusterLayout } from '../../../cluster/cluster'
import { buildRing } from '../../../cluster/routing'
import { hdfsCommand, isRemote, listRemoteInputs, localPath, readFirstLine, type ListedInput } from './job-fs'
import { outputLocation } from './output-location'
import { JOB_FILE_NAME, makeJobSpec, writeJobSpec, type HadoopJobSpec } from './job-spec'
import { keyFieldPartition } from './partitioner'
import { listS3JobInputs, readS3FirstLine } from './s3-job-inputs'
import { isS3Url } from '../../../s3/s3-url'
import { checkBase, type BaseBuild } from '../../partition-patches'
import { BUCKET_HEX, KEY_FIELD_SEPARATOR } from './shuffle-key'

/**
 * `rostore build --engine hadoop --print-command`: fixes everything the tasks must agree
 * on (options, chunk count, version, input files in file-index order, CSV headers) in a
 * job spec file, and prints the shell commands that run the job with Hadoop Streaming and
 * finalize it. Nothing is run and the output is not created.
 */
export interface HadoopPrintOptions {
  readonly build: BuildOptions
  /** Reduce tasks; default one per bucket: (node, chunk), or (partition, chunk) for layout 'partitions'. */
  readonly reducers?: number
  /** Local directory for the job spec, input list and script; default ./rostore-job-<store>-<version>. */
  readonly jobDir?: string
  /** The job's working directory on the cluster's file system (stats, input list). */
  readonly hadoopDir?: string
  /** How tasks start rostore; default `rostore` (on the PATH of every task node). */
  readonly taskCommand?: string
  /** Path of hadoop-streaming*.jar; default the one in $HADOOP_HOME. */
  readonly streamingJar?: string
  /** The `hdfs` command for hdfs:// paths. */
  readonly hdfsCommand?: string
  /** Extra files or archives to ship (`-archives`, e.g. a rostore tarball). */
  readonly archives?: readonly string[]
  /** Parquet/Arrow: about this many stored bytes of row groups or record batches per map task; default 64 MiB. */
  readonly splitBytes?: number
  /**
   * s3:// inputs are listed here with rostore's S3 client and read by the tasks with it
   * (the Ray engine), rather than handed to `hdfs dfs`; default false.
   */
  readonly s3Inputs?: boolean
  /**
   * `build --base` (the Ray engine): the job takes the base's chunk count and, for zstd,
   * its dictionary, after the checks the local engine makes; the patches are written once
   * the job is finalized (partition-patches.ts patchFinishedOutput).
   */
  readonly base?: BaseBuild
}

export interface PreparedHadoopJob {
  readonly spec: HadoopJobSpec
  readonly specPath: string
  readonly jobDir: string
  readonly script: string
  /** Bytes of each input, in file-index order (spec.inputs). */
  readonly inputSizes: readonly number[]
}

export const STREAMING_SETTINGS = {
  ignoreKey: 'stream.map.input.ignoreKey',
  keyFields: 'stream.num.map.output.key.fields',
  separator: 'mapreduce.map.output.key.field.separator',
  partitionerOptions: 'mapreduce.partition.keypartitioner.options',
  partitioner: 'org.apache.hadoop.mapred.lib.KeyFieldBasedPartitioner',
} as const

/**
 * The zstd dictionary of the job: the file given (--zstd-dictionary), else trained here from
 * the sample `rostore build` takes (builder/dictionary-training.ts), so both engines give
 * the version the same bytes. The sample is read from the inputs on this machine: local (or
 * mounted) files, checked first.
 */
async function jobDictionary(
  listed: readonly { readonly path: string }[],
  b: NormalizedBuildOptions,
  base: BaseBuild | undefined,
): Promise<BuildDictionary | undefined> {
  // Inputs are read only to train: with a given dictionary (or the base's) they may be remote.
  return buildDictionary(b, trainsDictionary(b, base) ? listed.map((f) => localPath(f.path)) : [], base)
}

/** The job's dictionary is trained here from its inputs: zstd with a dictionary, none given, no base's to keep. */
function trainsDictionary(b: NormalizedBuildOptions, base: BaseBuild | undefined): boolean {
  return b.compression === 'zstd' && b.dictionary && b.zstdDictionary === undefined && base?.manifest.dictionary === undefined
}

export async function prepareHadoopJob(o: HadoopPrintOptions): Promise<PreparedHadoopJob> {
  const b = normalizeBuildOptions(o.build)
  const remote = trainsDictionary(b, o.base) ? b.inputs.find(isRemote) : undefined
  if (remote !== undefined)
    throw new StoreError(
      'RO_BAD_OPTION',
      `${remote}: a zstd dictionary is trained from the inputs where the job is prepared, which reads local (or mounted) files only; ` +
        "give it one with --zstd-dictionary (a version's zstd.dict), build with --no-dictionary, or from local inputs",
    )
  const cmd = o.hdfsCommand ?? hdfsCommand()
  const columnar = b.format === 'parquet' || b.format === 'arrow'
  const listed = await listAllInputs(b.inputs, cmd, o.s3Inputs === true ? { requireSuccess: b.requireSuccess } : undefined)
  if (listed.length === 0)
    throw new StoreError('RO_BAD_OPTION', 'no input files: there is nothing for Hadoop to map (rostore build makes an empty store locally)')
  if (!columnar) {
    // FileInputFormat silently skips files named _* and .* (even when named explicitly).
    const hidden = listed.find((f) => /^[_.]/.test(basename(f.path)))
    if (hidden)
      throw new StoreError('RO_BAD_OPTION', `${hidden.path}: Hadoop does not read input files whose names start with '_' or '.'; rename it`)
  }
  const inputBytes = listed.reduce((s, f) => s + f.size, 0)
  const layout = clusterLayout(b.cluster)
  const partitions = buildRing(layout).partitionCount
  const chunks =
    b.chunks ?? o.base?.manifest.chunks ?? defaultChunks(b.layout, inputBytes, b.replication, { nodes: layout.length, partitions })
  if (o.base !== undefined)
    checkBase(o.base, { store: b.store, version: b.version, keyHash: b.keyHash, compression: b.compression, partitions, chunks })
  const buckets = bucketCount(bucketPlan(b.layout, layout, chunks))
  const reducers = o.reducers ?? Math.min(buckets, 10000)
  if (!Number.isInteger(reducers) || reducers < 1)
    throw new StoreError('RO_BAD_OPTION', `--reducers ${reducers} must be a positive integer`)

  const output = isRemote(b.output) ? b.output.replace(/\/+$/, '') : resolve(localPath(b.output))
  if (await outputLocation(output, { hdfsCommand: o.hdfsCommand }).exists())
    throw new StoreError('RO_BAD_OPTION', `output ${output} already exists; choose a new directory`)

  let csvHeaders: string[] | undefined
  if (b.format === 'csv') {
    csvHeaders = []
    for (const f of listed) {
      const header = o.s3Inputs === true && isS3Url(f.path) ? await readS3FirstLine(f.path) : await readFirstLine(cmd, f.path)
      if (header.length === 0) throw new StoreError('RO_BAD_INPUT', `${f.path}: the first line (the CSV header) is empty`)
      csvHeaders.push(header.toString('base64'))
    }
  }

  const dictionary = await jobDictionary(listed, b, o.base)
  const spec = makeJobSpec({
    store: b.store,
    version: b.version,
    format: b.format,
    ...(b.keyField !== undefined ? { keyField: b.keyField } : {}),
    ...(b.valueField !== undefined ? { valueField: b.valueField } : {}),
    cluster: b.cluster,
    replication: b.replication,
    // Written only for format 2: a format-1 spec stays what older tasks read.
    // Absent means format 1 (a spec written before format 2 existed).
    ...(b.layout === 'partitions' ? { layout: b.layout } : {}),
    chunks,
    compression: b.compression,
    ...(b.compression === 'zstd' ? { zstdLevel: b.zstdLevel } : {}),
    ...(dictionary !== undefined
      ? {
          zstdDictionary: dictionary.bytes.toString('base64'),
          zstdDictionarySource: dictionary.source,
        }
      : {}),
    keyHash: b.keyHash,
    onDuplicate: b.onDuplicate,
    inputs: listed.map((f) => f.path),
    ...(csvHeaders !== undefined ? { csvHeaders } : {}),
    output,
    reducers,
    ...(o.hdfsCommand !== undefined ? { hdfsCommand: o.hdfsCommand } : {}),
    ...(o.s3Inputs === true ? { s3Inputs: true } : {}),
  })

  const jobDir = resolve(o.jobDir ?? `rostore-job-${b.store}-${b.version}`)
  await mkdir(jobDir, { recursive: true })
  const specPath = join(jobDir, JOB_FILE_NAME)
  await writeJobSpec(specPath, spec)
  const anyRemote = isRemote(output) || spec.inputs.some(isRemote)
  const hadoopDir = (o.hadoopDir ?? (anyRemote ? `rostore-jobs/${b.store}-${b.version}` : `file://${jobDir}`)).replace(/\/+$/, '')
  const hadoopDirLocal = /^file:/i.test(hadoopDir)
  let inputList: string | undefined
  if (columnar) {
    // NLineInputFormat input: one split per line, one split per map task. Local (or
    // mounted) files are cut by row group / record batch as rostore build cuts them;
    // files on HDFS stay whole (their footers would have to be fetched here).
    const lines: string[] = []
    const target = o.splitBytes ?? 64 << 20
    for (const path of spec.inputs) {
      // Footers of s3:// parts are read here (ranged GETs of their ends) when the tasks read S3 themselves.
      if (isRemote(path) && !(spec.s3Inputs === true && isS3Url(path))) {
        lines.push(path)
        continue
      }
      const splits = await planSplits([path], b.format, target)
      for (const s of splits) lines.push(s.groupStart === undefined ? path : `${s.groupStart}-${s.groupEnd}\t${path}`)
    }
    const text = lines.join('\n') + '\n'
    if (hadoopDirLocal) {
      await mkdir(localPath(hadoopDir), { recursive: true })
      await writeFile(join(localPath(hadoopDir), 'inputs.txt'), text)
    }
    await writeFile(join(jobDir, 'inputs.txt'), text)
    inputList = `${hadoopDir}/inputs.txt`
  }
  const script = renderScript(o, spec, specPath, jobDir, hadoopDir, inputList)
  await writeFile(join(jobDir, 'run-hadoop.sh'), script, { mode: 0o755 })
  return { spec, specPath, jobDir, script, inputSizes: listed.map((f) => f.size) }
}

/** `s3`: s3:// inputs are listed with rostore's S3 client (with these options), not `hdfs dfs`. */
async function listAllInputs(inputs: readonly string[], cmd: string, s3?: { requireSuccess: boolean }): Promise<ListedInput[]> {
  if (!inputs.some(isRemote)) {
    const files = await listInputFiles([...inputs], s3)
    const out: ListedInput[] = []
    for (const f of files) out.push({ path: resolve(f), size: (await stat(f)).size })
    return out
  }
  const out: ListedInput[] = []
  const seen = new Set<string>()
  for (const input of inputs) {
    const files =
      s3 !== undefined && isS3Url(input)
        ? await listS3JobInputs(input, s3.requireSuccess)
        : isRemote(input)
          ? await listRemoteInputs(cmd, [input])
          : await Promise.all(
              (await listInputFiles([localPath(input)], s3)).map(async (f) => ({ path: resolve(f), size: (await stat(f)).size })),
            )
    for (const f of files) {
      if (seen.has(f.path)) continue
      seen.add(f.path)
      out.push(f)
    }
  }
  return out
}

/** How KeyFieldBasedPartitioner spreads the buckets over the reducers (it hashes the bucket field). */
export function bucketSpread(buckets: number, reducers: number): { used: number; max: number } {
  const counts = new Map<number, number>()
  const b = Buffer.alloc(BUCKET_HEX)
  for (let bucket = 0; bucket < buckets; bucket++) {
    b.write(bucket.toString(16).padStart(BUCKET_HEX, '0'), 0, 'latin1')
    const r = keyFieldPartition(b, 0, b.length, reducers)
    counts.set(r, (counts.get(r) ?? 0) + 1)
  }
  return { used: counts.size, max: Math.max(0, ...counts.values()) }
}

/** A word for sh: bare when safe, else single-quoted. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`
}

function hadoopUri(path: string): string {
  return isRemote(path) || /^file:/i.test(path) ? path : `file://${path}`
}

function renderScript(
  o: HadoopPrintOptions,
  spec: HadoopJobSpec,
  specPath: string,
  jobDir: string,
  hadoopDir: string,
  inputList: string | undefined,
): string {
  const q = shellQuote
  const task = o.taskCommand ?? 'rostore'
  const layout = spec.layout ?? 'nodes'
  const buckets = bucketCount(bucketPlan(layout, clusterLayout(spec.cluster), spec.chunks))
  const owners = layout === 'partitions' ? `${buckets / spec.chunks} partitions` : `${spec.cluster.nodes.length} nodes`
  const unit = layout === 'partitions' ? '(partition, chunk)' : '(node, chunk)'
  const statsDir = `${hadoopDir}/stats`
  const hadoopDirLocal = /^file:/i.test(hadoopDir)
  const jar =
    o.streamingJar !== undefined
      ? q(o.streamingJar)
      : '"${HADOOP_STREAMING_JAR:-$(ls "$HADOOP_HOME"/share/hadoop/tools/lib/hadoop-streaming-*.jar | head -n 1)}"'
  const spread = bucketSpread(buckets, spec.reducers)
  const lines: string[] = [
    '#!/bin/sh',
    `# rostore build on Hadoop Streaming: store ${spec.store} version ${spec.version}, ${spec.format} input (${spec.inputs.length} files),`,
    `# ${owners} x ${spec.chunks} chunks = ${buckets} ${unit} buckets, ${spec.reducers} reduce tasks;`,
    `# the partitioner gives buckets to ${spread.used} of them, at most ${spread.max} to one. Keys sort in Hadoop's`,
    '# default byte order of Text keys, which is the index order: no comparator option is needed.',
    `# Job spec: ${specPath}`,
    `# Every task node needs Node.js >= 20 and rostore (started as: ${task}). See docs/HADOOP.md.`,
    'set -e',
  ]
  if (inputList !== undefined && !hadoopDirLocal) {
    lines.push(`hdfs dfs -mkdir -p ${q(hadoopDir)}`)
    lines.push(`hdfs dfs -put -f ${q(join(jobDir, 'inputs.txt'))} ${q(inputList)}`)
  }
  const args: string[] = [
    `-D mapreduce.job.name=${q(`rostore build ${spec.store} v${spec.version}`)}`,
    `-D mapreduce.job.reduces=${spec.reducers}`,
    // Mappers get "<byte offset>\t<line>": offsets order duplicates exactly as rostore build does.
    `-D ${STREAMING_SETTINGS.ignoreKey}=false`,
    // The shuffle key is everything before the first tab; its fields are separated by '.'.
    `-D ${STREAMING_SETTINGS.keyFields}=1`,
    `-D ${STREAMING_SETTINGS.separator}=${KEY_FIELD_SEPARATOR}`,
    // Partition on field 1 (the bucket) only; sort on the whole key with the default byte order.
    `-D ${STREAMING_SETTINGS.partitionerOptions}=-k1,1`,
  ]
  if (inputList !== undefined) args.push('-D mapreduce.input.lineinputformat.linespermap=1')
  args.push(`-files ${q(specPath)}`)
  if (o.archives && o.archives.length > 0) args.push(`-archives ${q(o.archives.join(','))}`)
  if (inputList !== undefined) {
    args.push(`-input ${q(inputList)}`)
    args.push('-inputformat org.apache.hadoop.mapred.lib.NLineInputFormat')
  } else {
    for (const f of spec.inputs) args.push(`-input ${q(hadoopUri(f))}`)
  }
  args.push(`-output ${q(statsDir)}`)
  args.push(`-mapper ${q(`${task} hadoop map --job ${JOB_FILE_NAME}`)}`)
  args.push(`-reducer ${q(`${task} hadoop reduce --job ${JOB_FILE_NAME}`)}`)
  args.push(`-partitioner ${STREAMING_SETTINGS.partitioner}`)
  lines.push(`hadoop jar ${jar} \\`)
  args.forEach((a, i) => lines.push(`  ${a}${i < args.length - 1 ? ' \\' : ''}`))
  const finalize = `${task} hadoop finalize --job ${q(specPath)}`
  if (hadoopDirLocal) lines.push(`${finalize} --stats ${q(localPath(statsDir))}`)
  else lines.push(`hdfs dfs -cat ${q(`${statsDir}/part-*`)} | ${finalize} --stats -`)
  return lines.join('\n') + '\n'
}
