import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../../../builder/engines/local/build-job'
import { parseCluster } from '../../../../../cluster/cluster'
import { readJobSpec } from '../../../../../builder/engines/hadoop/job-spec'
import { prepareHadoopJob } from '../../../../../builder/engines/hadoop/print-command'
import { isStoreError } from '../../../../../common/errors'
import { cliPath } from '../../../../../common/paths'
import { writeInput } from '../../../../../testkit/stores/input-files'
import { expectSameTree } from '../../../../../testkit/stores/file-tree'
import { makeTmp } from '../../../../../testkit/stores/tmp'

/**
 * The printed commands, run for real: a fake `hadoop` (which checks every setting the
 * harness relies on and then runs the job on the harness) and a fake `hdfs` (a directory
 * standing in for HDFS) on the PATH, and the printed script run with sh.
 */
const tmp = makeTmp('rostore-hadoop-cmd-')
afterAll(tmp.cleanup)
let seq = 0
const path = (name: string): string => join(tmp.dir, `${seq++}-${name}`)

const clusterDoc = {
  name: 'test',
  nodes: [
    { id: 0, host: '127.0.0.1', port: 7100, partitions: [0, 2] },
    { id: 1, host: '127.0.0.1', port: 7101, partitions: [1, 3] },
  ],
}
const cluster = parseCluster(clusterDoc)
const clusterFile = join(tmp.dir, 'cluster.json')
const bin = join(tmp.dir, 'bin')
const hdfsRoot = join(tmp.dir, 'hdfs')
const task = `${process.execPath} ${cliPath()}`

beforeAll(() => {
  writeFileSync(clusterFile, JSON.stringify(clusterDoc))
  mkdirSync(bin)
  mkdirSync(hdfsRoot)
  for (const [name, main] of [
    ['hadoop', 'fake-hadoop-main.js'],
    ['hdfs', 'fake-hdfs-main.js'],
  ] as const) {
    writeFileSync(join(bin, name), `#!/bin/sh\nexec "${process.execPath}" "${join(__dirname, main)}" "$@"\n`)
    chmodSync(join(bin, name), 0o755)
  }
})

const env = (): NodeJS.ProcessEnv => ({ ...process.env, PATH: `${bin}:${process.env['PATH']}`, FAKE_HDFS_ROOT: hdfsRoot })

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [cliPath(), ...args], { encoding: 'utf8', env: env() })
}

const recs = (n: number, f: number): [string, string][] => Array.from({ length: n }, (_, i) => [`k${i % 700}`, `file ${f} line ${i}`])

test("local inputs: the printed script runs the job and finalizes it into rostore build's exact output", async () => {
  const input = path('in')
  mkdirSync(input)
  for (let f = 0; f < 2; f++) await writeInput(join(input, `p${f}.tsv`), 'tsv', recs(900, f))
  const local = path('local')
  await buildStore({ inputs: [input], format: 'tsv', cluster, store: 'st', output: local, version: 9, onDuplicate: 'last', replication: 2 })

  const out = path('hadoop')
  const jobDir = path('job')
  const common = [
    '--input',
    input,
    '--format',
    'tsv',
    '--cluster',
    clusterFile,
    '--store',
    'st',
    '--version',
    '9',
    '--on-duplicate',
    'last',
    '--replication',
    '2',
  ]
  const r = cli([
    'build',
    ...common,
    '--output',
    out,
    '--engine',
    'hadoop',
    '--print-command',
    '--reducers',
    '3',
    '--job-dir',
    jobDir,
    '--task-command',
    task,
    '--streaming-jar',
    '/opt/hadoop/hadoop-streaming-3.3.6.jar',
  ])
  expect(r.stderr).toContain('job spec')
  expect(r.status).toBe(0)
  const script = r.stdout
  expect(script).toContain('hadoop jar /opt/hadoop/hadoop-streaming-3.3.6.jar \\')
  for (const s of [
    '-D mapreduce.job.reduces=3',
    '-D stream.map.input.ignoreKey=false',
    '-D mapreduce.map.output.key.field.separator=.',
    '-D mapreduce.partition.keypartitioner.options=-k1,1',
    '-partitioner org.apache.hadoop.mapred.lib.KeyFieldBasedPartitioner',
    `-files ${jobDir}/rostore-job.json`,
  ]) {
    expect(script).toContain(s)
  }
  expect(existsSync(out)).toBe(false)
  expect(readFileSync(join(jobDir, 'run-hadoop.sh'), 'utf8')).toBe(script)
  const spec = await readJobSpec(join(jobDir, 'rostore-job.json'))
  // Format 2 (the default): one chunk per partition for an input this small.
  expect(spec).toMatchObject({
    store: 'st',
    version: 9,
    chunks: 1,
    reducers: 3,
    layout: 'partitions',
    inputs: [join(input, 'p0.tsv'), join(input, 'p1.tsv')],
  })

  const run = spawnSync('/bin/sh', [join(jobDir, 'run-hadoop.sh')], { encoding: 'utf8', env: env() })
  expect(run.stderr).toBe('')
  expect(run.status).toBe(0)
  expect(run.stdout).toMatch(/finalized .*1800 input records/)
  expectSameTree(local, out)
  expect(cli(['verify', out]).status).toBe(0)
})

test('HDFS inputs and output (Parquet): listing, input list upload, commits and finalize go through `hdfs dfs`', async () => {
  mkdirSync(join(hdfsRoot, 'data', 'in'), { recursive: true })
  for (let f = 0; f < 2; f++) await writeInput(join(hdfsRoot, 'data', 'in', `p${f}.parquet`), 'parquet', recs(400, f))
  writeFileSync(join(hdfsRoot, 'data', 'in', '.hidden'), 'skipped')
  const local = path('local')
  await buildStore({
    inputs: [join(hdfsRoot, 'data', 'in')],
    format: 'parquet',
    cluster,
    store: 'st',
    output: local,
    version: 4,
    chunks: 2,
    onDuplicate: 'first',
  })

  const jobDir = path('job')
  const r = cli([
    'build',
    '--input',
    'hdfs://nn:8020/data/in',
    '--format',
    'parquet',
    '--cluster',
    clusterFile,
    '--store',
    'st',
    '--version',
    '4',
    '--chunks',
    '2',
    '--on-duplicate',
    'first',
    '--output',
    'hdfs://nn:8020/stores/st-4',
    '--engine',
    'hadoop',
    '--print-command',
    '--job-dir',
    jobDir,
    '--task-command',
    task,
    '--streaming-jar',
    '/x/hadoop-streaming.jar',
  ])
  expect(r.stderr).toContain('job spec')
  expect(r.status).toBe(0)
  expect(r.stdout).toContain('hdfs dfs -put -f')
  expect(r.stdout).toContain('-inputformat org.apache.hadoop.mapred.lib.NLineInputFormat')
  expect(r.stdout).toMatch(/hdfs dfs -cat 'rostore-jobs\/st-4\/stats\/part-\*' \| .* hadoop finalize --job .* --stats -/)
  const spec = await readJobSpec(join(jobDir, 'rostore-job.json'))
  expect(spec.inputs).toEqual([0, 1].map((f) => `hdfs://nn:8020/data/in/p${f}.parquet`))

  const run = spawnSync('/bin/sh', [join(jobDir, 'run-hadoop.sh')], { encoding: 'utf8', env: env() })
  expect(run.stderr).toBe('')
  expect(run.status).toBe(0)
  expectSameTree(local, join(hdfsRoot, 'stores', 'st-4'))
})

describe('refusals', () => {
  async function code(p: Promise<unknown>): Promise<string> {
    try {
      await p
    } catch (err) {
      if (isStoreError(err)) return `${err.code}: ${err.message}`
      throw err
    }
    return 'ok'
  }
  const build = (o: object) => ({
    inputs: [] as string[],
    format: 'tsv' as const,
    cluster,
    store: 'st',
    output: path('out'),
    version: 1,
    ...o,
  })

  test('--engine hadoop without --print-command', () => {
    const r = cli([
      'build',
      '--input',
      clusterFile,
      '--format',
      'tsv',
      '--cluster',
      clusterFile,
      '--store',
      's',
      '--output',
      path('o'),
      '--engine',
      'hadoop',
    ])
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/add --print-command/)
  })

  test('--engine hadoop --base is refused, naming the engines that take it', () => {
    const withBase = cli([
      ...['build', '--input', clusterFile, '--format', 'tsv', '--cluster', clusterFile, '--store', 's'],
      ...['--output', path('o'), '--engine', 'hadoop', '--print-command', '--base', path('v0')],
    ])
    expect(withBase.status).toBe(1)
    expect(withBase.stderr).toMatch(/--base is for the local and ray engines/)
  })

  test('input files Hadoop would skip, an existing output, no input files', async () => {
    const dir = path('in')
    mkdirSync(dir)
    writeFileSync(join(dir, '_part.tsv'), 'a\t1\n')
    expect(await code(prepareHadoopJob({ build: build({ inputs: [join(dir, '_part.tsv')] }), jobDir: path('j') }))).toMatch(
      /RO_BAD_OPTION: .*_part.tsv: Hadoop does not read/,
    )
    writeFileSync(join(dir, 'part.tsv'), 'a\t1\n')
    expect(await code(prepareHadoopJob({ build: build({ inputs: [join(dir, 'part.tsv')], output: dir }), jobDir: path('j') }))).toMatch(
      /RO_BAD_OPTION: output .* already exists/,
    )
    const empty = path('empty')
    mkdirSync(empty)
    expect(await code(prepareHadoopJob({ build: build({ inputs: [empty] }), jobDir: path('j') }))).toMatch(/no input files/)
  })

  test('CSV headers are captured per file; default reducers = buckets; default chunks as rostore build', async () => {
    const dir = path('csv')
    mkdirSync(dir)
    writeFileSync(join(dir, 'a.csv'), '\ufeffkey,value\r\nx,1\r\n')
    writeFileSync(join(dir, 'b.csv'), 'value,key\ny,2\n')
    // Format 1's defaults: at least 2 chunks per node, a reducer per (node, chunk).
    const job = await prepareHadoopJob({ build: build({ inputs: [dir], format: 'csv', layout: 'nodes' }), jobDir: path('j') })
    expect(job.spec.csvHeaders!.map((h) => Buffer.from(h, 'base64').toString())).toEqual(['key,value', 'value,key'])
    expect(job.spec.chunks).toBe(2)
    expect(job.spec.reducers).toBe(4)
    expect(job.script).toContain(`-input file://${join(dir, 'a.csv')}`)
  })
})
