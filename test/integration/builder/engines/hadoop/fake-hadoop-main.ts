/**
 * A stand-in for `hadoop jar hadoop-streaming.jar ...` that runs the job the printed
 * command describes on the local harness. It parses the command line as Hadoop Streaming
 * does (generic -D/-files options first, then the streaming options) and refuses any job
 * whose settings differ from what the harness emulates (the partitioner, its options and
 * separator, map input with byte offsets, NLineInputFormat for file lists): so a test that
 * runs the printed script through it checks that the printed settings are the right ones.
 * hdfs:// paths are the fake HDFS under $FAKE_HDFS_ROOT.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { isRemote, localPath } from '../../../../../builder/engines/hadoop/job-fs'
import { JOB_FILE_NAME, readJobSpec } from '../../../../../builder/engines/hadoop/job-spec'
import { runHarness } from '../../../../../testkit/peers/hadoop-harness'
import { fakeHdfsLocal } from './fake-paths'

function fail(msg: string): never {
  process.stderr.write(`fake hadoop: ${msg}\n`)
  process.exit(1)
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2)
  if (argv[0] !== 'jar' || !/hadoop-streaming.*\.jar$/.test(argv[1] ?? ''))
    fail(`expected "jar <hadoop-streaming*.jar>", got ${argv.slice(0, 2).join(' ')}`)
  const D = new Map<string, string>()
  const opts = new Map<string, string[]>()
  let streaming = false
  for (let i = 2; i < argv.length; i += 2) {
    const flag = argv[i]!
    const value = argv[i + 1]
    if (value === undefined) fail(`${flag} without a value`)
    if (flag === '-D' || flag === '-files' || flag === '-archives') {
      if (streaming) fail(`generic option ${flag} after streaming options: Hadoop ignores it`)
      if (flag === '-D') {
        const eq = value.indexOf('=')
        D.set(value.slice(0, eq), value.slice(eq + 1))
        continue
      }
    } else {
      streaming = true
    }
    opts.set(flag, [...(opts.get(flag) ?? []), value])
  }
  const one = (flag: string): string => {
    const v = opts.get(flag)
    if (v?.length !== 1) fail(`need exactly one ${flag}`)
    return v[0]!
  }
  const expect = (key: string, want: string | undefined, dflt?: string): void => {
    const got = D.get(key) ?? dflt
    if (got !== want) fail(`-D ${key}=${String(got)}, the harness emulates ${String(want)}`)
  }
  expect('stream.map.input.ignoreKey', 'false')
  expect('stream.num.map.output.key.fields', '1', '1')
  expect('stream.map.output.field.separator', '\t', '\t')
  expect('mapreduce.map.output.key.field.separator', '.')
  expect('mapreduce.partition.keypartitioner.options', '-k1,1')
  if (one('-partitioner') !== 'org.apache.hadoop.mapred.lib.KeyFieldBasedPartitioner') fail(`unexpected partitioner ${one('-partitioner')}`)
  const reducers = Number(D.get('mapreduce.job.reduces'))
  if (!(reducers >= 1)) fail('no mapreduce.job.reduces')

  const root = process.env['FAKE_HDFS_ROOT'] ?? ''
  const toLocal = (p: string): string => (isRemote(p) || (!p.startsWith('/') && !/^file:/.test(p)) ? fakeHdfsLocal(root, p) : localPath(p))
  const files = one('-files').split(',')
  const specFile = files.find((f) => basename(f) === JOB_FILE_NAME) ?? fail(`-files does not ship ${JOB_FILE_NAME}`)
  const spec = await readJobSpec(localPath(specFile))
  const inputs = opts.get('-input') ?? []
  if (spec.format === 'parquet' || spec.format === 'arrow') {
    if (one('-inputformat') !== 'org.apache.hadoop.mapred.lib.NLineInputFormat') fail('file lists need NLineInputFormat')
    expect('mapreduce.input.lineinputformat.linespermap', '1')
    const list = readFileSync(toLocal(one('-input')), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
    if (JSON.stringify(list) !== JSON.stringify(spec.inputs)) fail("the input list does not name the job spec's inputs")
  } else {
    if (opts.has('-inputformat')) fail('text input needs the default TextInputFormat')
    if (JSON.stringify(inputs.map((i) => (isRemote(i) ? i : localPath(i)))) !== JSON.stringify(spec.inputs))
      fail(`-input ${inputs.join(' ')} is not the job spec's input list`)
  }
  const output = toLocal(one('-output'))
  if (existsSync(output)) fail(`Output directory ${one('-output')} already exists`)
  const work = mkdtempSync(join(tmpdir(), 'fake-hadoop-'))
  mkdirSync(output, { recursive: true })
  await runHarness({
    spec,
    specPath: localPath(specFile),
    workDir: work,
    reducers,
    splitBytes: 16 << 10,
    mapCommand: one('-mapper'),
    reduceCommand: one('-reducer'),
    localFile: toLocal,
    statsDir: output,
    env: process.env,
  })
  writeFileSync(join(output, '_SUCCESS'), '')
  rmSync(work, { recursive: true, force: true })
}

main().catch((err: unknown) => fail(err instanceof Error ? (err.stack ?? err.message) : String(err)))
