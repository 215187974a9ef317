import type { Argv } from 'yargs'
import { StoreError } from '../../common/errors'
import { buildStore } from '../../builder/engines/local/build-job'
import { DUPLICATE_POLICIES, OUTPUT_LAYOUTS, type DuplicatePolicy } from '../../builder/build-options'
import { loadCluster } from '../../cluster/cluster'
import { INPUT_FORMATS, type InputFormat } from '../../formats/input/types'
import { COMPRESSIONS, type Compression } from '../../formats/store/layout/metadata'
import { createBuildProgressBar, printBuildSummary } from '../build-progress'
import { prepareHadoopJob } from '../../builder/engines/hadoop/print-command'
import { integerOption } from '../integer-option'
import { buildOnRay } from '../../builder/engines/ray/ray-build'
import { printRaySummary } from '../ray-summary'

export const command = 'build'
export const describe = 'Build per-node, per-chunk store files from input files'

export const builder = (y: Argv) =>
  y
    .option('input', {
      type: 'string',
      array: true,
      demandOption: true,
      describe: 'input file or directory, or s3://bucket/key (an object or a prefix of parts) (repeatable)',
    })
    .option('require-success', {
      type: 'boolean',
      default: false,
      describe: 'every input directory or prefix must hold a _SUCCESS marker (its writer finished)',
    })
    .option('format', { choices: INPUT_FORMATS, demandOption: true, describe: 'input format' })
    .option('cluster', { type: 'string', demandOption: true, describe: 'cluster.json' })
    .option('store', { type: 'string', demandOption: true, describe: 'store name' })
    .option('output', { type: 'string', demandOption: true, describe: 'output directory, or s3://bucket/prefix/ (must not exist)' })
    .option('replication', { ...integerOption('replication'), default: 1, describe: 'distinct nodes holding each key' })
    .option('key-field', { type: 'string', describe: 'key column/field (TSV: 1-based column number; default 1 / "key")' })
    .option('value-field', {
      type: 'string',
      describe: 'value column/field (default: TSV rest of line, else "value" or the whole record as JSON)',
    })
    .option('layout', {
      choices: OUTPUT_LAYOUTS,
      default: 'partitions' as const,
      describe: 'nodes: a directory per node (format 1); partitions: each partition written once (format 2, docs/FORMAT.md)',
    })
    .option('chunks', {
      ...integerOption('chunks'),
      describe: 'chunks per node, or per partition with --layout partitions (default: grows with the input)',
    })
    .option('base', {
      type: 'string',
      describe:
        'an earlier build output of the store (a directory or an s3:// prefix): also write a patch per partition against it (local and ray engines, --layout partitions)',
    })
    .option('patch-only', {
      type: 'boolean',
      describe: 'with --base: keep only the patches (and the full files of partitions without one); nodes need the base',
    })
    .option('compression', { choices: COMPRESSIONS, default: 'none' as const, describe: 'value compression' })
    .option('zstd-level', { ...integerOption('zstd-level'), describe: 'zstd: compression level, -7..22 (default 3)' })
    .option('dictionary', {
      type: 'boolean',
      describe:
        "zstd: train a dictionary from a sample of the values (default; with --base, the base's is kept); --no-dictionary: plain zstd",
    })
    .option('zstd-dictionary', {
      type: 'string',
      describe: "zstd: compress with this dictionary file (a version's zstd.dict, a dump's .zstd.dict) instead of training one",
    })
    .option('version', { ...integerOption('version'), describe: 'version number (default: Unix time in seconds)' })
    .option('workers', { ...integerOption('workers'), describe: 'worker threads (default: number of cores)' })
    .option('memory-mb', { ...integerOption('memory-mb'), default: 1024, describe: 'memory budget of the build' })
    .option('tmpdir', {
      type: 'string',
      describe: 'where sorted runs spill (default: OS temp dir); ray: the work directory of an s3:// output',
    })
    .option('on-duplicate', { choices: DUPLICATE_POLICIES, default: 'error' as const, describe: 'what to do with a key given twice' })
    .option('progress', { type: 'boolean', describe: 'show a progress bar (default: when stderr is a terminal)' })
    .option('engine', {
      choices: ['local', 'hadoop', 'ray'] as const,
      default: 'local' as const,
      describe: 'local: worker threads here; hadoop: prepare a Hadoop Streaming job; ray: run on a Ray cluster (docs/DISTRIBUTED.md)',
    })
    .option('ray-address', { type: 'string', describe: 'ray: the cluster, auto or HOST:PORT (default: $RAY_ADDRESS, else a local Ray)' })
    .option('ray-python', { type: 'string', describe: 'ray: the Python with ray installed (default: $ROSTORE_RAY_PYTHON or python3)' })
    .option('split-mb', { ...integerOption('split-mb'), describe: 'ray: input MiB per map task (default 64)' })
    .option('print-command', {
      type: 'boolean',
      default: false,
      describe: 'hadoop: write the job spec and print the commands that run the job (docs/HADOOP.md)',
    })
    .option('reducers', {
      ...integerOption('reducers'),
      describe: 'hadoop, ray: reduce tasks (default: one per node, or partition, and chunk)',
    })
    .option('job-dir', {
      type: 'string',
      describe: 'hadoop: local directory for the job spec and script (default ./rostore-job-<store>-<version>)',
    })
    .option('hadoop-dir', { type: 'string', describe: "hadoop: the job's working directory on the cluster file system" })
    .option('task-command', { type: 'string', describe: 'hadoop, ray: how tasks start rostore (default: rostore; ray: this node and CLI)' })
    .option('streaming-jar', { type: 'string', describe: 'hadoop: path of hadoop-streaming*.jar (default: from $HADOOP_HOME)' })

export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  if (a.base !== undefined && a.engine === 'hadoop')
    throw new StoreError(
      'RO_BAD_OPTION',
      '--base is for the local and ray engines (a Hadoop output on HDFS is not diffed where the job is prepared)',
    )
  if (a.engine === 'hadoop') return printHadoopJob(a)
  if (a.engine === 'ray') return runRayBuild(a)
  if (a['print-command']) throw new StoreError('RO_BAD_OPTION', '--print-command prints a Hadoop job: add --engine hadoop')
  const bar = (a.progress ?? process.stderr.isTTY) ? createBuildProgressBar() : undefined
  try {
    const summary = await buildStore({
      ...(await commonBuildOptions(a)),
      workers: a.workers,
      memoryMb: a['memory-mb'],
      tmpdir: a.tmpdir,
      base: a.base,
      ...(a['patch-only'] === true ? { patchOnly: true } : {}),
      onProgress: bar?.update,
    })
    bar?.stop()
    printBuildSummary(summary)
  } finally {
    bar?.stop()
  }
}

async function printHadoopJob(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  if (!a['print-command'])
    throw new StoreError(
      'RO_BAD_OPTION',
      '--engine hadoop runs on a Hadoop cluster: add --print-command to prepare the job and print the commands that run it',
    )
  const job = await prepareHadoopJob({
    build: await commonBuildOptions(a),
    reducers: a.reducers,
    jobDir: a['job-dir'],
    hadoopDir: a['hadoop-dir'],
    taskCommand: a['task-command'],
    streamingJar: a['streaming-jar'],
  })
  process.stdout.write(job.script)
  process.stderr.write(`job spec ${job.specPath}; the commands above are also in ${job.jobDir}/run-hadoop.sh\n`)
}

async function runRayBuild(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  if (a['print-command']) throw new StoreError('RO_BAD_OPTION', '--print-command prints a Hadoop job: use --engine hadoop')
  // Ctrl-C or SIGTERM: stop the job and remove its work directory (no output left behind).
  const cancel = new AbortController()
  const onSignal = (): void => cancel.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  const s = await buildOnRay({
    // --tmpdir: where the work directory of an s3:// output goes (shared storage), and an s3:// base.
    build: {
      ...(await commonBuildOptions(a)),
      tmpdir: a.tmpdir,
      signal: cancel.signal,
      base: a.base,
      ...(a['patch-only'] === true ? { patchOnly: true } : {}),
    },
    address: a['ray-address'],
    python: a['ray-python'],
    // Split at spaces: the command is a path and its arguments (e.g. "node /opt/rostore/lib/bin/cli.js").
    taskCommand: a['task-command']?.split(' ').filter((w) => w !== ''),
    reducers: a.reducers,
    splitBytes: a['split-mb'] === undefined ? undefined : a['split-mb'] * (1 << 20),
  }).finally(() => {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  })
  printRaySummary(s)
}

/** The options both engines take, from the command line. */
async function commonBuildOptions(a: Awaited<ReturnType<typeof builder>['argv']>) {
  return {
    inputs: a.input,
    requireSuccess: a['require-success'],
    format: a.format as InputFormat,
    cluster: await loadCluster(a.cluster),
    store: a.store,
    output: a.output,
    replication: a.replication,
    layout: a.layout,
    keyField: a['key-field'],
    valueField: a['value-field'],
    chunks: a.chunks,
    compression: a.compression as Compression,
    zstdLevel: a['zstd-level'],
    dictionary: a.dictionary,
    ...(a['zstd-dictionary'] === undefined ? {} : { zstdDictionary: a['zstd-dictionary'] }),
    version: a.version,
    onDuplicate: a['on-duplicate'] as DuplicatePolicy,
  }
}
