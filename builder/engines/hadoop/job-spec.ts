import { readFile, writeFile, rename } from 'node:fs/promises'
import { StoreError } from '../../../common/errors'
import { normalizeBuildOptions, type DuplicatePolicy, type NormalizedBuildOptions, type OutputLayout } from '../../build-options'
import { parseCluster, type Cluster } from '../../../cluster/cluster'
import type { InputFormat } from '../../../formats/input/types'
import type { Compression } from '../../../formats/store/layout/metadata'
import { MAX_ZSTD_LEVEL, MIN_ZSTD_LEVEL } from '../../../formats/store/chunk/zstd-codec'
import { DICTIONARY_SOURCES, type DictionarySource } from '../../dictionary-training'

/**
 * Everything a Hadoop task needs to know about the build, fixed once by
 * `rostore build --engine hadoop --print-command` and shipped to every task with
 * `-files`: the options that shape the output (the same ones `rostore build` takes), the
 * chunk count, the input files in file-index order, and where chunk files go.
 */
export const JOB_FILE_NAME = 'rostore-job.json'
const KIND = 'rostore-hadoop-job'
const SPEC_VERSION = 1

export interface HadoopJobSpec {
  readonly kind: typeof KIND
  readonly specVersion: typeof SPEC_VERSION
  readonly store: string
  readonly version: number
  readonly format: InputFormat
  readonly keyField?: string
  readonly valueField?: string
  readonly cluster: Cluster
  readonly replication: number
  /** What the build writes (build-options.ts); absent: 'nodes', as specs written before it. */
  readonly layout?: OutputLayout
  /** Chunks per node ('nodes') or per partition ('partitions'). */
  readonly chunks: number
  readonly compression: Compression
  /** zstd: the compression level (absent: the default). */
  readonly zstdLevel?: number
  /**
   * zstd: the version's dictionary, base64, trained where the job was prepared from the
   * same sample `rostore build` takes (builder/dictionary-training.ts); absent: plain zstd.
   */
  readonly zstdDictionary?: string
  /** Where it came from: trained where the job was prepared (absent: the same), or given (--zstd-dictionary). */
  readonly zstdDictionarySource?: DictionarySource
  readonly keyHash: string
  readonly onDuplicate: DuplicatePolicy
  /**
   * The input files, position = file index (the order `rostore build` reads them in):
   * absolute local paths or hdfs:// URIs.
   */
  readonly inputs: readonly string[]
  /** CSV only: each input's header line (base64 of its bytes, without BOM and line end). */
  readonly csvHeaders?: readonly string[]
  /** Where chunk files and metadata go: an absolute local (or mounted) path, or an hdfs:// URI. */
  readonly output: string
  /** Reduce tasks the printed job asks for. */
  readonly reducers: number
  /** The `hdfs` command tasks run for hdfs:// paths (default: `hdfs` on the PATH). */
  readonly hdfsCommand?: string
  /**
   * s3:// inputs are read by rostore's own S3 client in each task, with the task node's
   * AWS_* credentials (the Ray engine); without it they go through `hdfs dfs` like any URI.
   */
  readonly s3Inputs?: boolean
}

export type JobSpecFields = Omit<HadoopJobSpec, 'kind' | 'specVersion'>

export function makeJobSpec(fields: JobSpecFields): HadoopJobSpec {
  const spec: HadoopJobSpec = { kind: KIND, specVersion: SPEC_VERSION, ...fields }
  return validateJobSpec(JSON.parse(JSON.stringify(spec)) as unknown, 'job spec')
}

export async function writeJobSpec(path: string, spec: HadoopJobSpec): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`
  await writeFile(tmp, JSON.stringify(spec, null, 2) + '\n')
  await rename(tmp, path)
}

export async function readJobSpec(path: string): Promise<HadoopJobSpec> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    throw new StoreError(
      'RO_NOT_FOUND',
      `${path}: cannot read the job spec (ship it with -files and pass --job): ${(err as Error).message}`,
      { cause: err },
    )
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new StoreError('RO_BAD_OPTION', `${path}: job spec is not valid JSON: ${(err as Error).message}`, { cause: err })
  }
  return validateJobSpec(json, path)
}

/** Checks a parsed job spec with the same rules as `rostore build` options. */
export function validateJobSpec(json: unknown, where: string): HadoopJobSpec {
  const bad = (msg: string): never => {
    throw new StoreError('RO_BAD_OPTION', `${where}: ${msg}`)
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return bad('not a JSON object')
  const j = json as Record<string, unknown>
  if (j['kind'] !== KIND) bad(`not a rostore Hadoop job spec (kind ${JSON.stringify(j['kind'])})`)
  if (j['specVersion'] !== SPEC_VERSION) bad(`job spec version ${String(j['specVersion'])}, this rostore understands ${SPEC_VERSION}`)
  const inputs = j['inputs']
  if (!Array.isArray(inputs) || !inputs.every((p) => typeof p === 'string' && p.length > 0)) bad('"inputs" must be a list of paths')
  const output = j['output']
  if (typeof output !== 'string' || output.length === 0) bad('"output" must be a path')
  const reducers = j['reducers']
  if (!Number.isInteger(reducers) || (reducers as number) < 1) bad('"reducers" must be a positive integer')
  const chunks = j['chunks']
  if (!Number.isInteger(chunks)) bad('"chunks" must be an integer')
  const headers = j['csvHeaders']
  if (
    headers !== undefined &&
    (!Array.isArray(headers) || headers.length !== (inputs as unknown[]).length || !headers.every((h) => typeof h === 'string'))
  ) {
    bad('"csvHeaders" must hold one header per input')
  }
  if (j['format'] === 'csv' && headers === undefined) bad('CSV input needs "csvHeaders"')
  const hdfsCommand = j['hdfsCommand']
  if (hdfsCommand !== undefined && typeof hdfsCommand !== 'string') bad('"hdfsCommand" must be a string')
  if (j['s3Inputs'] !== undefined && typeof j['s3Inputs'] !== 'boolean') bad('"s3Inputs" must be true or false')
  const cluster = parseCluster(j['cluster'], `${where}: cluster`)
  // The build's own validation, so a hand-edited spec fails the way `rostore build` would.
  normalizeBuildOptions({
    inputs: ['-'],
    output: output as string,
    format: j['format'] as InputFormat,
    cluster,
    store: j['store'] as string,
    replication: j['replication'] as number,
    layout: j['layout'] as OutputLayout | undefined,
    chunks: chunks as number,
    compression: j['compression'] as Compression,
    version: j['version'] as number,
    onDuplicate: j['onDuplicate'] as DuplicatePolicy,
    keyHash: j['keyHash'] as string,
    workers: 1,
  })
  const level = j['zstdLevel']
  if (level !== undefined && (!Number.isInteger(level) || (level as number) < MIN_ZSTD_LEVEL || (level as number) > MAX_ZSTD_LEVEL))
    bad(`"zstdLevel" must be an integer ${MIN_ZSTD_LEVEL}..${MAX_ZSTD_LEVEL}`)
  const dictionary = j['zstdDictionary']
  if (dictionary !== undefined && (typeof dictionary !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(dictionary)))
    bad('"zstdDictionary" must be base64')
  const source = j['zstdDictionarySource']
  if (source !== undefined && (dictionary === undefined || !DICTIONARY_SOURCES.includes(source as DictionarySource)))
    bad(`"zstdDictionarySource" must be one of ${DICTIONARY_SOURCES.join(', ')}, with "zstdDictionary"`)
  if (j['compression'] !== 'zstd' && (level !== undefined || dictionary !== undefined))
    bad('"zstdLevel" and "zstdDictionary" go with "compression": "zstd"')
  for (const k of ['keyField', 'valueField', 'keyHash'] as const) {
    if (j[k] !== undefined && typeof j[k] !== 'string') bad(`"${k}" must be a string`)
  }
  if (typeof j['version'] !== 'number' || typeof j['replication'] !== 'number' || typeof j['keyHash'] !== 'string')
    bad('"version", "replication" and "keyHash" are required')
  return { ...(j as unknown as HadoopJobSpec), cluster }
}

/** The spec as the options `rostore build` would normalize them to (for metadata). */
export function specBuildOptions(spec: HadoopJobSpec): NormalizedBuildOptions {
  return normalizeBuildOptions({
    // The file list may be empty (an empty input directory); only its presence is checked.
    inputs: spec.inputs.length > 0 ? spec.inputs : ['-'],
    format: spec.format,
    cluster: spec.cluster,
    store: spec.store,
    output: spec.output,
    replication: spec.replication,
    // A spec without the field predates format 2: its job writes node directories.
    layout: spec.layout ?? 'nodes',
    keyField: spec.keyField,
    valueField: spec.valueField,
    chunks: spec.chunks,
    compression: spec.compression,
    ...(spec.compression === 'zstd' ? { zstdLevel: spec.zstdLevel, dictionary: spec.zstdDictionary !== undefined } : {}),
    version: spec.version,
    onDuplicate: spec.onDuplicate,
    keyHash: spec.keyHash,
    workers: 1,
  })
}

/** The job's dictionary bytes, or undefined (plain zstd, or another codec). */
export function specDictionary(spec: HadoopJobSpec): Buffer | undefined {
  return spec.zstdDictionary === undefined ? undefined : Buffer.from(spec.zstdDictionary, 'base64')
}
