import type { Argv } from 'yargs'
import { StoreError } from '../../common/errors'
import { finalizeHadoopBuild, readStatsSources } from '../../builder/engines/hadoop/finalize'
import { JOB_FILE_NAME, readJobSpec } from '../../builder/engines/hadoop/job-spec'
import { runMapTask } from '../../builder/engines/hadoop/mapper'
import { runReduceTask } from '../../builder/engines/hadoop/reducer'

export const command = 'hadoop'
export const describe = 'Hadoop Streaming steps of a distributed build (see docs/HADOOP.md and rostore build --engine hadoop)'

const jobOption = {
  type: 'string',
  default: process.env['ROSTORE_JOB'] ?? JOB_FILE_NAME,
  describe: 'job spec written by rostore build --engine hadoop --print-command (shipped with -files)',
} as const

function parseRange(text: string | undefined): { start: number; end: number } | undefined {
  if (text === undefined) return undefined
  const m = /^(\d{1,15})-(\d{1,15})$/.exec(text)
  if (m === null || Number(m[1]) > Number(m[2])) throw new StoreError('RO_BAD_OPTION', `--range ${text}: expected START-END byte offsets`)
  return { start: Number(m[1]), end: Number(m[2]) }
}

export const builder = (y: Argv) =>
  y
    .command(
      'map',
      'Streaming mapper: input records on stdin, shuffle lines on stdout',
      (c) =>
        c
          .option('job', jobOption)
          .option('file-field', {
            type: 'boolean',
            default: false,
            describe: 'stdin lines are <file>\\t<offset>\\t<line> (Spark RDD.pipe)',
          })
          .option('range', {
            type: 'string',
            describe:
              'START-END: read the lines starting in this byte range of $mapreduce_map_input_file (a path or s3:// object) instead of stdin',
          }),
      async (a) => {
        await runMapTask({ job: await readJobSpec(a.job), fileField: a['file-field'], range: parseRange(a.range) })
      },
    )
    .command(
      'reduce',
      'Streaming reducer: sorted shuffle lines on stdin, chunk files to the output, statistics on stdout',
      (c) => c.option('job', jobOption),
      async (a) => {
        await runReduceTask({ job: await readJobSpec(a.job) })
      },
    )
    .command(
      'finalize',
      "Write every node's metadata (and empty chunks) from the reducers' statistics: the output becomes a normal build output",
      (c) =>
        c
          .option('job', {
            type: 'string',
            demandOption: true,
            describe: 'the job spec written by rostore build --engine hadoop --print-command',
          })
          // Not `array: true`: yargs would then refuse '-' as a value. Repeat the option instead.
          .option('stats', {
            type: 'string',
            requiresArg: true,
            demandOption: true,
            describe: "the job's output: part-* files, their directory, or - for stdin (repeatable)",
          })
          .option('verify', {
            type: 'boolean',
            default: false,
            describe: 'also check every record, as rostore verify does (local output only)',
          }),
      async (a) => {
        const job = await readJobSpec(a.job)
        const stats = await readStatsSources(([] as string[]).concat(a.stats), readStdin)
        const s = await finalizeHadoopBuild({ job, stats, verify: a.verify })
        process.stdout.write(
          `finalized ${s.output}: store ${s.store} version ${s.version}, ${s.inputRecords} input records from ${s.mapTasks} map tasks, ` +
            `${s.duplicates} duplicates, ${s.chunks} chunks per ${s.layout === 'partitions' ? 'partition' : 'node'} (${s.emptyChunks} empty ones written now)\n`,
        )
        for (const n of s.nodes) process.stdout.write(`  node ${n.nodeId}: ${n.records} records, ${n.bytes} bytes\n`)
      },
    )
    .demandCommand(1, 'name a step: map, reduce or finalize')

export function handler(): void {}

async function readStdin(): Promise<string> {
  const parts: Buffer[] = []
  for await (const chunk of process.stdin) parts.push(chunk as Buffer)
  return Buffer.concat(parts).toString('utf8')
}
