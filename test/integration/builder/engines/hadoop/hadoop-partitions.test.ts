import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../../../builder/engines/local/build-job'
import type { BuildOptions } from '../../../../../builder/build-options'
import { prepareHadoopJob } from '../../../../../builder/engines/hadoop/print-command'
import { readManifest } from '../../../../../formats/store/layout/manifest-io'
import { runFinalize, runHarness, type HarnessOptions } from '../../../../../testkit/peers/hadoop-harness'
import { writeInput } from '../../../../../testkit/stores/input-files'
import { expectSameTree } from '../../../../../testkit/stores/file-tree'
import { makeTmp } from '../../../../../testkit/stores/tmp'
import { ENGINE_TEST_CLUSTER, engineRecords } from '../../../../../testkit/stores/engine-inputs'

const tmp = makeTmp('rostore-hadoop-p-')
afterAll(tmp.cleanup)
let seq = 0
const path = (name: string): string => join(tmp.dir, `${seq++}-${name}`)

const cluster = ENGINE_TEST_CLUSTER

const records = (n: number, file: number): [string, string][] => engineRecords(n, file)

async function compare(
  build: Partial<BuildOptions>,
  harness: Partial<HarnessOptions> = {},
  reducers = 3,
): Promise<{ local: string; hadoop: string; jobDir: string; finalize: string; killed: string[] }> {
  const inputDir = path('in')
  mkdirSync(inputDir)
  for (let f = 0; f < 2; f++) await writeInput(join(inputDir, `part-${f}.tsv`), 'tsv', records(1000, f))
  const options: BuildOptions = {
    inputs: [inputDir],
    format: 'tsv',
    cluster,
    store: 'st',
    output: path('local'),
    version: 7,
    replication: 2,
    layout: 'partitions',
    chunks: 2,
    onDuplicate: 'last',
    ...build,
  }
  await buildStore({ ...options, workers: 2 })
  const hadoopOut = path('hadoop')
  const job = await prepareHadoopJob({ build: { ...options, output: hadoopOut }, reducers, jobDir: path('job') })
  const run = await runHarness({ spec: job.spec, specPath: job.specPath, workDir: path('work'), splitBytes: 40 << 10, ...harness })
  const finalize = await runFinalize(job.specPath, run.statsDir)
  expectSameTree(options.output, hadoopOut)
  return { local: options.output, hadoop: hadoopOut, jobDir: job.jobDir, finalize, killed: run.killed }
}

test('layout partitions: the Hadoop output is byte-identical to rostore build (partition files and manifest), also with a reduce attempt killed', async () => {
  const { hadoop, jobDir, finalize, killed } = await compare({}, { killReduce: 0 })
  expect(killed).toEqual([expect.stringMatching(/_r_000000_0$/)])
  const m = await readManifest(hadoop)
  expect(m.partitions).toBe(9)
  expect(m.partitionFiles.flatMap((e) => e.files)).toHaveLength(9 * 2 * 2)
  expect(finalize).toMatch(/2 chunks per partition/)
  // The job spec says what it writes; the script counts (partition, chunk) buckets.
  expect(JSON.parse(readFileSync(join(jobDir, 'rostore-job.json'), 'utf8'))).toMatchObject({ layout: 'partitions', chunks: 2 })
  expect(readFileSync(join(jobDir, 'run-hadoop.sh'), 'utf8')).toMatch(/9 partitions x 2 chunks = 18 \(partition, chunk\) buckets/)
})

test('layout partitions with the default chunk count, replication 3 and more buckets than keys per reducer', async () => {
  await compare({ chunks: undefined, replication: 3, onDuplicate: 'first', compression: 'gzip' }, {}, 4)
})

test('finalize refuses statistics that do not add up, and writes no manifest', async () => {
  const input = path('in.tsv')
  await writeInput(input, 'tsv', records(500, 0))
  const out = path('hadoop')
  const job = await prepareHadoopJob({
    build: {
      inputs: [input],
      format: 'tsv',
      cluster,
      store: 'st',
      output: out,
      version: 3,
      chunks: 2,
      onDuplicate: 'last',
      layout: 'partitions',
    },
    reducers: 2,
    jobDir: path('job'),
  })
  const run = await runHarness({ spec: job.spec, specPath: job.specPath, workDir: path('work'), splitBytes: 40 << 10 })
  writeFileSync(join(run.statsDir, 'part-000001'), '')
  await expect(runFinalize(job.specPath, run.statsDir)).rejects.toThrow(/do not add up/)
  expect(existsSync(join(out, 'metadata.json'))).toBe(false)
})
