import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { ERROR_CODES, StoreError, type ErrorCode } from '../../../common/errors'
import { cliPath, packageRoot } from '../../../common/paths'
import type { BuildOptions } from '../../build-options'
import { finalizeHadoopBuild, readStatsSources, type FinalizeSummary } from '../hadoop/finalize'
import { isRemote } from '../hadoop/job-fs'
import { prepareHadoopJob } from '../hadoop/print-command'
import type { UploadSummary } from '../../output-upload'
import { isS3Url } from '../../../s3/s3-url'
import { patchFinishedOutput, readBaseBuild, type PatchesWritten } from '../../partition-patches'
import type { DownloadedBase } from '../../s3-base'

/**
 * `rostore build --engine ray`: the build as a Ray job. The job spec is the Hadoop
 * engine's (`rostore-job.json`), so map tasks run `rostore hadoop map` and reduce tasks
 * `rostore hadoop reduce`, the same code as every engine; the thin Python driver
 * (`rostore_ray.py`, shipped beside this file) schedules them and moves the shuffle
 * through Ray's object store. Finalize (metadata, empty chunks, checks) runs here.
 *
 * Everything goes into a hidden work directory beside the output (`.<name>.ray-<id>/`:
 * job spec, task markers, statistics, and `out/`, the output being built), which every
 * Ray node must reach at the same path (shared storage: NFS, a mounted bucket). The
 * finished `out/` is renamed to the output; on any failure the work directory is removed,
 * so a failed job leaves no output behind. An s3:// output: the work directory is under
 * --tmpdir, and the finished `out/` is uploaded, manifests last. s3:// inputs are listed
 * here and read by the map tasks themselves, with their node's AWS_* credentials.
 *
 * `--base` (a local build output or an s3:// prefix, downloaded under --tmpdir first): the
 * job takes the base's chunk count and zstd dictionary, and once finalized, the partition
 * patches are written here, one partition after another (partition-patches.ts
 * patchFinishedOutput), before the output is moved or uploaded.
 */
export interface RayBuildOptions {
  readonly build: BuildOptions
  /** Ray cluster address: `auto`, `HOST:PORT`, or undefined ($RAY_ADDRESS, else a local Ray). */
  readonly address?: string
  /** The Python with `ray` installed that runs the driver; default $ROSTORE_RAY_PYTHON or python3. */
  readonly python?: string
  /** How tasks start rostore on the nodes; default this Node.js and this CLI (same paths on every node). */
  readonly taskCommand?: readonly string[]
  /** Reduce tasks; default one per bucket: (node, chunk), or (partition, chunk) for layout 'partitions'. */
  readonly reducers?: number
  /** Bytes of input per map task (text formats; row groups / batches for Parquet and Arrow); default 64 MiB. */
  readonly splitBytes?: number
  /** Each progress line of the driver ("ray: map 3/8 tasks, ..."); default: written to stderr. */
  readonly onProgress?: (line: string) => void
  /** Environment of the driver process (tasks get their node's `ray start` environment); default process.env. */
  readonly env?: NodeJS.ProcessEnv
}

/** What the Ray job did, from the driver's summary.json plus finalize. */
export interface RayJobSummary {
  readonly nodes: number
  readonly cpus: number
  readonly mapTasks: number
  readonly reduceTasks: number
  readonly mapAttempts: number
  readonly reduceAttempts: number
  readonly retries: number
  readonly records: number
  readonly inputBytes: number
  readonly shuffleBytes: number
  /** Bytes Ray spilled from object stores to disk (MiB; null when Ray could not say). */
  readonly spilledMiB: number | null
  readonly seconds: {
    readonly connect: number
    readonly map: number
    readonly reduce: number
    /** Sums over successful task attempts: whole task, and the part in the rostore CLI (and sort). */
    readonly mapTaskSum: number
    readonly mapRostoreSum: number
    readonly reduceTaskSum: number
    readonly reduceSortSum: number
    readonly reduceRostoreSum: number
  }
}

export interface RayBuildSummary {
  readonly output: string
  readonly job: RayJobSummary
  readonly finalize: FinalizeSummary
  /** For an s3:// output: what the upload took (included in seconds.finalize). */
  readonly upload?: UploadSummary
  /** With --base: the patches written (their seconds included in seconds.finalize). */
  readonly patches?: PatchesWritten
  readonly seconds: { readonly prepare: number; readonly ray: number; readonly finalize: number; readonly total: number }
}

/** The driver script, shipped in the package beside the compiled code's sources. */
export function rayDriverPath(): string {
  return join(packageRoot(__dirname), 'builder', 'engines', 'ray', 'rostore_ray.py')
}

export async function buildOnRay(o: RayBuildOptions): Promise<RayBuildSummary> {
  const t0 = performance.now()
  const b = o.build
  const toS3 = isS3Url(b.output)
  if ((isRemote(b.output) && !toS3) || b.inputs.some((i) => isRemote(i) && !isS3Url(i)))
    throw new StoreError(
      'RO_BAD_OPTION',
      'the ray engine reads paths mounted on every node and s3:// objects; hdfs:// and other URIs are not supported',
    )
  if (o.splitBytes !== undefined && (!Number.isSafeInteger(o.splitBytes) || o.splitBytes < 1))
    throw new StoreError('RO_BAD_OPTION', `the split size must be a positive number of bytes, got ${o.splitBytes}`)
  // An s3:// output is built in a work directory under --tmpdir (which every Ray node must
  // reach at the same path), then uploaded from here, manifests last.
  const upload = toS3 ? outputUpload() : undefined
  await upload?.checkS3Output(b.output)
  const output = toS3 ? b.output : resolve(b.output)
  if (!toS3 && existsSync(output)) throw new StoreError('RO_BAD_OPTION', `output ${output} already exists; choose a new directory`)
  const work = toS3
    ? join(resolve(b.tmpdir ?? tmpdir()), `.rostore-s3-output.ray-${randomBytes(6).toString('hex')}`)
    : join(dirname(output), `.${basename(output)}.ray-${randomBytes(6).toString('hex')}`)
  await mkdir(work, { recursive: true })
  let downloaded: DownloadedBase | undefined
  try {
    if (b.base !== undefined && isS3Url(b.base)) downloaded = await s3Base().downloadBase(b.base, b.tmpdir ?? tmpdir(), b.signal)
    const base = b.base === undefined ? undefined : await readBaseBuild(downloaded?.dir ?? b.base)
    const job = await prepareHadoopJob({
      build: { ...b, output: join(work, 'out') },
      reducers: o.reducers,
      jobDir: work,
      splitBytes: o.splitBytes,
      s3Inputs: true,
      ...(base !== undefined ? { base } : {}),
    })
    // The driver plans text splits from these sizes: it never opens an s3:// input itself.
    await writeFile(join(work, 'input-sizes.json'), JSON.stringify(job.inputSizes))
    const t1 = performance.now()
    await runDriver(o, work)
    const t2 = performance.now()
    const jobSummary = JSON.parse(await readFile(join(work, 'summary.json'), 'utf8')) as RayJobSummary
    const stats = await readStatsSources([join(work, 'stats')], () => Promise.resolve(''))
    const finalize = await finalizeHadoopBuild({ job: job.spec, stats })
    const patches = base === undefined ? undefined : await patchFinishedOutput(base, join(work, 'out'), b.patchOnly === true)
    const uploaded = upload === undefined ? undefined : await upload.uploadBuildOutput(join(work, 'out'), output, b.signal)
    if (upload === undefined) await rename(join(work, 'out'), output)
    const t3 = performance.now()
    return {
      output,
      job: jobSummary,
      finalize: { ...finalize, output },
      ...(uploaded !== undefined ? { upload: uploaded } : {}),
      ...(patches !== undefined ? { patches } : {}),
      seconds: { prepare: (t1 - t0) / 1000, ray: (t2 - t1) / 1000, finalize: (t3 - t2) / 1000, total: (t3 - t0) / 1000 },
    }
  } finally {
    await rm(work, { recursive: true, force: true })
    await downloaded?.remove()
  }
}

function s3Base(): typeof import('../../s3-base') {
  // Loaded only for an s3:// base, as the upload's module is for an s3:// output.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../../s3-base') as typeof import('../../s3-base')
}

function outputUpload(): typeof import('../../output-upload') {
  // Loaded only for an s3:// output: a build to local disk never loads the S3 client.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../../output-upload') as typeof import('../../output-upload')
}

async function runDriver(o: RayBuildOptions, work: string): Promise<void> {
  const env = o.env ?? process.env
  const python = o.python ?? env['ROSTORE_RAY_PYTHON'] ?? 'python3'
  const taskCommand = o.taskCommand ?? [process.execPath, cliPath()]
  const args = [rayDriverPath(), '--job-dir', work, '--task-command', JSON.stringify(taskCommand)]
  if (o.address !== undefined) args.push('--address', o.address)
  if (o.splitBytes !== undefined) args.push('--split-bytes', String(o.splitBytes))
  const child = spawn(python, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { RAY_USAGE_STATS_ENABLED: '0', ...env } })
  // Cancelling the build stops the driver; Ray cancels its tasks when the driver goes.
  const abort = (): void => {
    child.kill('SIGTERM')
  }
  o.build.signal?.addEventListener('abort', abort, { once: true })
  const tail: string[] = []
  const onLine = o.onProgress ?? ((l: string) => process.stderr.write(`${l}\n`))
  const lines = createInterface({ input: child.stderr })
  lines.on('line', (l) => {
    if (l.startsWith('ray: ')) onLine(l)
    else {
      tail.push(l)
      if (tail.length > 20) tail.shift()
    }
  })
  const status = await new Promise<number | null>((res, rej) => {
    child.on('error', (err) =>
      rej(
        new StoreError(
          'RO_BAD_OPTION',
          `cannot start the Ray driver with ${python} (set --ray-python or $ROSTORE_RAY_PYTHON): ${err.message}`,
        ),
      ),
    )
    child.on('close', (code) => res(code))
  }).finally(() => o.build.signal?.removeEventListener('abort', abort))
  if (o.build.signal?.aborted === true) throw new StoreError('RO_ABORTED', 'the Ray build was cancelled')
  if (status === 0) return
  let failure: { code?: unknown; message?: unknown } | undefined
  try {
    failure = JSON.parse(await readFile(join(work, 'error.json'), 'utf8')) as { code?: unknown; message?: unknown }
  } catch {
    failure = undefined
  }
  if (failure !== undefined && typeof failure.message === 'string' && ERROR_CODES.includes(failure.code as ErrorCode))
    throw new StoreError(failure.code as ErrorCode, failure.message)
  throw new StoreError(
    'RO_UNAVAILABLE',
    `the Ray driver (${python}) exited with status ${status}${tail.length > 0 ? `:\n${tail.join('\n')}` : ''}` +
      (/No module named 'ray'/.test(tail.join('\n')) ? '\n(install Ray with: pip install ray)' : ''),
  )
}
