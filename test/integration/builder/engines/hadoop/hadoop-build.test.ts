import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../../../builder/engines/local/build-job'
import type { BuildOptions } from '../../../../../builder/build-options'
import { prepareHadoopJob } from '../../../../../builder/engines/hadoop/print-command'
import { readJobSpec } from '../../../../../builder/engines/hadoop/job-spec'
import { DICTIONARY_FILE } from '../../../../../formats/store/chunk/dictionary-file'
import { realisticValues } from '../../../../../testkit/stores/realistic-values'
import { cliPath } from '../../../../../common/paths'
import type { InputFormat } from '../../../../../formats/input/types'
import { runFinalize, runHarness, type HarnessOptions } from '../../../../../testkit/peers/hadoop-harness'
import { writeInput } from '../../../../../testkit/stores/input-files'
import { expectSameTree } from '../../../../../testkit/stores/file-tree'
import { makeTmp } from '../../../../../testkit/stores/tmp'
import { ENGINE_TEST_CLUSTER, engineRecords } from '../../../../../testkit/stores/engine-inputs'

const tmp = makeTmp('rostore-hadoop-')
afterAll(tmp.cleanup)
let seq = 0
const path = (name: string): string => join(tmp.dir, `${seq++}-${name}`)

const cluster = ENGINE_TEST_CLUSTER

const records = (n: number, file: number): [string, string][] => engineRecords(n, file)

interface Case {
  readonly format: InputFormat
  readonly files: number
  readonly perFile: number
  readonly build?: Partial<BuildOptions>
  readonly harness?: Partial<HarnessOptions>
  readonly reducers?: number
  /** Parquet/Arrow: bytes of row groups / record batches per map task. */
  readonly splitBytes?: number
  /** The records of each input file (default: engineRecords). */
  readonly records?: (n: number, file: number) => [string, string][]
}

async function compare(c: Case): Promise<{ local: string; hadoop: string; killed: string[]; jobDir: string }> {
  const inputDir = path(`in-${c.format}`)
  mkdirSync(inputDir)
  for (let f = 0; f < c.files; f++)
    await writeInput(join(inputDir, `part-${f}.${c.format}`), c.format, (c.records ?? records)(c.perFile, f))
  const options: BuildOptions = {
    inputs: [inputDir],
    format: c.format,
    cluster,
    store: 'st',
    output: path('local'),
    version: 7,
    replication: 2,
    chunks: 3,
    onDuplicate: 'last',
    ...c.build,
  }
  await buildStore({ ...options, workers: 2 })
  const hadoopOut = path('hadoop')
  const job = await prepareHadoopJob({
    build: { ...options, output: hadoopOut },
    reducers: c.reducers ?? 2,
    jobDir: path('job'),
    splitBytes: c.splitBytes,
  })
  const run = await runHarness({ spec: job.spec, specPath: job.specPath, workDir: path('work'), splitBytes: 40 << 10, ...c.harness })
  await runFinalize(job.specPath, run.statsDir)
  expectSameTree(options.output, hadoopOut)
  return { local: options.output, hadoop: hadoopOut, killed: run.killed, jobDir: job.jobDir }
}

describe.each(['tsv', 'jsonl', 'parquet'] as const)('%s input', (format) => {
  test('the harness output is byte-identical to rostore build, and rostore verify accepts it', async () => {
    const { hadoop } = await compare({ format, files: 3, perFile: 1000 })
    const v = spawnSync(process.execPath, [cliPath(), 'verify', hadoop], { encoding: 'utf8' })
    expect(v.stderr).toBe('')
    expect(v.status).toBe(0)
    // Format 2 (the default): one build output, every partition once.
    expect(v.stdout.match(/^ok /gm)).toHaveLength(1)
  })
})

test('tasks on the JavaScript twins (ROSTORE_NATIVE=0) write the bytes the local build writes with the addon', async () => {
  // The local build runs in this process (the addon unless the suite runs with ROSTORE_NATIVE=0),
  // the map and reduce tasks in child processes forced onto the twins.
  await compare({ format: 'tsv', files: 2, perFile: 1500, harness: { env: { ROSTORE_NATIVE: '0' } } })
})

test('csv with the default chunk count, gzip and key/value fields is byte-identical too', async () => {
  await compare({
    format: 'csv',
    files: 2,
    perFile: 800,
    build: { chunks: undefined, compression: 'gzip', onDuplicate: 'first', keyField: 'value', valueField: 'key' },
    reducers: 3,
  })
})

describe('--compression zstd: the job carries the dictionary trained where it is prepared', () => {
  const realistic = (n: number, file: number): [string, string][] => {
    const gen = realisticValues(100 + file)
    return Array.from({ length: n }, (_, i) => [`u-${file}-${i}`, gen.next().toString()])
  }

  test.each(['partitions', 'nodes'] as const)(
    'layout %s: byte-identical to rostore build, dictionary and value counts included',
    async (layout) => {
      const { local, hadoop, jobDir } = await compare({
        format: 'tsv',
        files: 3,
        perFile: 1500,
        records: realistic,
        build: { compression: 'zstd', zstdLevel: 5, layout },
      })
      const dir = layout === 'partitions' ? '' : 'node-0'
      expect(readFileSync(join(hadoop, dir, DICTIONARY_FILE)).equals(readFileSync(join(local, dir, DICTIONARY_FILE)))).toBe(true)
      const meta = JSON.parse(readFileSync(join(hadoop, dir, 'metadata.json'), 'utf8')) as { build: Record<string, unknown> }
      expect(meta.build).toMatchObject({ zstdLevel: 5, zstdDictionary: 'trained' })
      expect(meta.build['storedValueBytes']).toBeLessThan((meta.build['valueBytes'] as number) / 2)
      const spec = JSON.parse(readFileSync(join(jobDir, 'rostore-job.json'), 'utf8')) as { zstdLevel: number; zstdDictionary: string }
      expect(spec.zstdLevel).toBe(5)
      expect(Buffer.from(spec.zstdDictionary, 'base64').equals(readFileSync(join(local, dir, DICTIONARY_FILE)))).toBe(true)
      const v = spawnSync(process.execPath, [cliPath(), 'verify', hadoop], { encoding: 'utf8' })
      expect(v.status).toBe(0)
    },
  )

  test('--no-dictionary: plain zstd frames, no dictionary in the job or the output', async () => {
    const { hadoop, jobDir } = await compare({
      format: 'jsonl',
      files: 2,
      perFile: 400,
      records: realistic,
      build: { compression: 'zstd', dictionary: false },
    })
    expect(existsSync(join(hadoop, DICTIONARY_FILE))).toBe(false)
    expect(JSON.parse(readFileSync(join(jobDir, 'rostore-job.json'), 'utf8'))).not.toHaveProperty('zstdDictionary')
  })

  test('a dictionary needs inputs this machine can read; a spec with a bad dictionary or level is refused', async () => {
    const zstdJob = (input: string, jobDir: string, zstdDictionary?: string) =>
      prepareHadoopJob({
        build: {
          inputs: [input],
          format: 'tsv',
          cluster,
          store: 'st',
          output: path('out'),
          version: 1,
          compression: 'zstd',
          ...(zstdDictionary === undefined ? {} : { zstdDictionary }),
        },
        reducers: 1,
        jobDir: path(jobDir),
        hdfsCommand: 'false',
      })
    await expect(zstdJob('hdfs://nn/in/part-0.tsv', 'job')).rejects.toMatchObject({ code: 'RO_BAD_OPTION' })
    const input = path('in.tsv')
    await writeInput(input, 'tsv', realistic(500, 0))
    const job = await zstdJob(input, 'job')
    const raw = JSON.parse(readFileSync(job.specPath, 'utf8')) as Record<string, unknown>
    for (const [field, bad] of [
      ['zstdDictionary', 'not base64!'],
      ['zstdLevel', 99],
    ] as const) {
      writeFileSync(job.specPath, JSON.stringify({ ...raw, [field]: bad }))
      await expect(readJobSpec(job.specPath)).rejects.toThrow(new RegExp(field))
    }
    expect(raw['zstdDictionarySource']).toBe('trained')
    // A dictionary given to the job (--zstd-dictionary) is carried as it is, and said so.
    const given = path('given.dict')
    writeFileSync(given, Buffer.from(raw['zstdDictionary'] as string, 'base64'))
    const withGiven = await zstdJob(input, 'job-given', given)
    const spec2 = JSON.parse(readFileSync(withGiven.specPath, 'utf8')) as Record<string, unknown>
    expect([spec2['zstdDictionary'], spec2['zstdDictionarySource']]).toEqual([raw['zstdDictionary'], 'given'])
    writeFileSync(job.specPath, JSON.stringify({ ...raw, zstdDictionarySource: 'borrowed' }))
    await expect(readJobSpec(job.specPath)).rejects.toThrow(/zstdDictionarySource/)
    writeFileSync(job.specPath, JSON.stringify({ ...raw, compression: 'gzip' }))
    await expect(readJobSpec(job.specPath)).rejects.toThrow(/go with "compression": "zstd"/)
  })
})

describe('failed and rerun attempts give the same output', () => {
  test('a map attempt killed mid-run and rerun', async () => {
    const { killed } = await compare({ format: 'tsv', files: 1, perFile: 1500, harness: { killMap: 1 } })
    expect(killed).toEqual([expect.stringMatching(/_m_000001_0$/)])
  })

  test('a reduce attempt killed after committing a chunk, and a speculative pair of attempts', async () => {
    const { killed } = await compare({ format: 'jsonl', files: 2, perFile: 500, harness: { killReduce: 0, speculativeReduce: 1 } })
    expect(killed).toEqual([expect.stringMatching(/_r_000000_0$/)])
  })
})

test('arrow input (one map task per file, like Parquet)', async () => {
  await compare({ format: 'arrow', files: 2, perFile: 300, build: { replication: 3 } })
})

test('parquet input cut by row group: one map task per split, byte-identical', async () => {
  // testkit/stores/input-files writes Parquet in row groups of 2048 rows: 5000 rows are 3 groups.
  const { jobDir } = await compare({ format: 'parquet', files: 2, perFile: 5000, splitBytes: 1 })
  const lines = readFileSync(join(jobDir, 'inputs.txt'), 'utf8').trim().split('\n')
  expect(lines).toHaveLength(6)
  expect(lines[0]).toMatch(/^0-1\t\//)
}, 300_000) // 6 map tasks and 2 builds: several minutes on a loaded 2-core machine

test("empty buckets: more buckets than keys still gives the local engine's empty chunks", async () => {
  await compare({ format: 'tsv', files: 1, perFile: 4, build: { chunks: 5 }, reducers: 4 })
})

test('finalize refuses statistics that do not add up, and leaves no metadata', async () => {
  const input = path('in.tsv')
  await writeInput(input, 'tsv', records(500, 0))
  const out = path('hadoop')
  const job = await prepareHadoopJob({
    build: { inputs: [input], format: 'tsv', cluster, store: 'st', output: out, version: 3, chunks: 2, onDuplicate: 'last' },
    reducers: 2,
    jobDir: path('job'),
  })
  const run = await runHarness({ spec: job.spec, specPath: job.specPath, workDir: path('work'), splitBytes: 40 << 10 })
  // Lose one reducer's part file.
  writeFileSync(join(run.statsDir, 'part-000001'), '')
  await expect(runFinalize(job.specPath, run.statsDir)).rejects.toThrow(/do not add up/)
  expect(existsSync(join(out, 'node-0', 'metadata.json'))).toBe(false)
})
