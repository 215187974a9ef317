import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseCluster } from '../../../../../cluster/cluster'
import { finalizeHadoopBuild } from '../../../../../builder/engines/hadoop/finalize'
import {
  makeJobSpec,
  readJobSpec,
  validateJobSpec,
  writeJobSpec,
  type HadoopJobSpec,
  type JobSpecFields,
} from '../../../../../builder/engines/hadoop/job-spec'
import { FileIndex, runMapTask } from '../../../../../builder/engines/hadoop/mapper'
import { runReduceTask } from '../../../../../builder/engines/hadoop/reducer'
import { parseStatsText, type MapStats } from '../../../../../builder/engines/hadoop/stats'
import { SyncLineReader } from '../../../../../builder/engines/hadoop/streaming-io'
import { taskEnv, taskOfAttempt } from '../../../../../builder/engines/hadoop/task-env'
import { isStoreError } from '../../../../../common/errors'
import { makeTmp } from '../../../../../testkit/stores/tmp'

const tmp = makeTmp()
afterAll(tmp.cleanup)
let seq = 0
const path = (name: string): string => join(tmp.dir, `${seq++}-${name}`)

const cluster = parseCluster({
  name: 'c',
  nodes: [
    { id: 4, host: 'h', port: 1, partitions: [0, 1] },
    { id: 2, host: 'h', port: 2, partitions: [2, 3] },
  ],
})

function spec(o: Partial<JobSpecFields> = {}): HadoopJobSpec {
  return makeJobSpec({
    store: 's',
    version: 3,
    format: 'tsv',
    cluster,
    replication: 1,
    chunks: 2,
    compression: 'none',
    keyHash: 'md5',
    onDuplicate: 'error',
    inputs: ['/data/a.tsv', 'hdfs://nn:8020/data/b.tsv'],
    output: path('out'),
    reducers: 2,
    ...o,
  })
}

const hadoopEnv = (file: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  mapreduce_task_attempt_id: 'attempt_1_0001_m_000000_0',
  mapreduce_task_id: 'task_1_0001_m_000000',
  mapreduce_map_input_file: file,
  stream_map_input_ignoreKey: 'false',
  ...extra,
})

async function map(
  job: HadoopJobSpec,
  input: string,
  env: NodeJS.ProcessEnv,
  fileField = false,
): Promise<{ stats: MapStats; lines: string[] }> {
  const inFile = path('map.in')
  const outFile = path('map.out')
  writeFileSync(inFile, input)
  const inFd = openSync(inFile, 'r')
  const outFd = openSync(outFile, 'w')
  try {
    const stats = await runMapTask({ job, env, input: inFd, output: outFd, fileField })
    return {
      stats,
      lines: readFileSync(outFile, 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    }
  } finally {
    closeSync(inFd)
    closeSync(outFd)
  }
}

async function reduce(job: HadoopJobSpec, input: string, attempt = 'attempt_1_0001_r_000000_0'): Promise<string> {
  const inFile = path('reduce.in')
  const outFile = path('reduce.out')
  writeFileSync(inFile, input)
  const inFd = openSync(inFile, 'r')
  const outFd = openSync(outFile, 'w')
  try {
    await runReduceTask({ job, env: { mapreduce_task_attempt_id: attempt }, input: inFd, output: outFd })
    return readFileSync(outFile, 'utf8')
  } finally {
    closeSync(inFd)
    closeSync(outFd)
  }
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p
  } catch (err) {
    if (isStoreError(err)) return `${err.code}: ${err.message}`
    throw err
  }
  return 'ok'
}

describe('map task', () => {
  test('one line per record and replica, then one statistics line; the file comes from the environment', async () => {
    const job = spec({ replication: 2 })
    const { stats, lines } = await map(job, '0\ta\t1\n4\tb\t2\n', hadoopEnv('hdfs://other:9000/data/b.tsv'))
    expect(lines).toHaveLength(5)
    expect(lines.slice(0, 4).every((l) => /^[0-9a-f]{8}\.[0-9a-f]+\.00000001[0-9a-f]{14}\t/.test(l))).toBe(true)
    expect(lines[4]).toMatch(/^stats\.task_1_0001_m_000000\t\{/)
    expect(stats).toMatchObject({
      task: 'task_1_0001_m_000000',
      records: 2,
      kinds: { keys: { string: 2 }, values: { string: 2 } },
      files: [{ fileIndex: 1, firstBlank: null, lastLine: 4 }],
    })
  })

  test('--file-field: lines name their file (Spark RDD.pipe)', async () => {
    const { stats, lines } = await map(spec(), 'file:/data/a.tsv\t0\ta\t1\nhdfs://nn:8020/data/b.tsv\t0\tb\t2\n', {}, true)
    expect(stats.files.map((f) => f.fileIndex)).toEqual([0, 1])
    expect(lines).toHaveLength(3)
  })

  test('needs byte offsets under Hadoop (stream.map.input.ignoreKey=false)', async () => {
    expect(await code(map(spec(), 'a\t1\n', hadoopEnv('/data/a.tsv', { stream_map_input_ignoreKey: undefined })))).toMatch(
      /RO_BAD_OPTION: .*ignoreKey=false/,
    )
    expect(await code(map(spec(), 'a\t1\n', { mapreduce_map_input_file: '/data/a.tsv' }))).toMatch(/RO_BAD_INPUT: .*byte offset/)
  })

  test('a file not in the job is refused', async () => {
    expect(await code(map(spec(), '0\ta\t1\n', hadoopEnv('/data/zzz.tsv')))).toMatch(
      /RO_BAD_INPUT: \/data\/zzz.tsv: not one of the job's input files/,
    )
  })

  test('blank lines: fine at the end of the split (reported), an error before a record', async () => {
    const { stats } = await map(spec(), '0\ta\t1\n4\t\n5\t\r\n', hadoopEnv('/data/a.tsv'))
    expect(stats.files).toEqual([{ fileIndex: 0, firstBlank: 4, lastLine: 0 }])
    expect(await code(map(spec(), '0\ta\t1\n4\t\n5\tb\t2\n', hadoopEnv('/data/a.tsv')))).toBe(
      'RO_BAD_INPUT: /data/a.tsv (line at byte 4): empty line',
    )
  })
})

describe('reduce task', () => {
  test('chunks committed to <output>/node-<id>/, one statistics line each; map statistics passed through', async () => {
    const job = spec()
    const { lines } = await map(job, '0\ta\t1\n4\tb\t2\n8\tc\t3\n', hadoopEnv('/data/a.tsv'))
    const out = await reduce(job, [...lines].sort().join('\n') + '\n')
    const stats = parseStatsText(out, 'out')
    expect(stats.maps).toHaveLength(1)
    expect(stats.chunks.reduce((s, c) => s + c.records, 0)).toBe(3)
    for (const c of stats.chunks) {
      expect(c.attempt).toBe('attempt_1_0001_r_000000_0')
      expect(existsSync(join(job.output, `node-${c.nodeId}`, `${c.chunk}.index`))).toBe(true)
    }
    // The attempt's own directory holds nothing once its files are committed.
    const attemptDir = join(job.output, '_attempts', 'attempt_1_0001_r_000000_0')
    for (const d of readdirSync(attemptDir)) expect(readdirSync(join(attemptDir, d))).toEqual([])
  })

  test('unsorted input is refused', async () => {
    const job = spec()
    const { lines } = await map(job, '0\ta\t1\n4\tb\t2\n8\tc\t3\n', hadoopEnv('/data/a.tsv'))
    const records = lines
      .filter((l) => !l.startsWith('stats'))
      .sort()
      .reverse()
    expect(await code(reduce(job, records.join('\n') + '\n'))).toMatch(/RO_BAD_INPUT: reducer input is not sorted/)
  })

  test('a bucket beyond the job is refused', async () => {
    expect(await code(reduce(spec(), `00000009.${'0'.repeat(32)}61.0000000000000000000000\t\n`))).toMatch(/bucket 9 does not exist/)
  })

  test('duplicates with --on-duplicate error name both positions by byte offset', async () => {
    const job = spec()
    const { lines } = await map(job, '0\tk\t1\n4\tk\t2\n', hadoopEnv('/data/a.tsv'))
    expect(await code(reduce(job, lines.sort().join('\n') + '\n'))).toBe(
      'RO_DUPLICATE_KEY: duplicate key "k": /data/a.tsv (line at byte 0) and /data/a.tsv (line at byte 4) (use --on-duplicate first|last to keep one)',
    )
  })
})

describe('finalize checks', () => {
  const mapStats = (files: MapStats['files'], records = 0): MapStats => ({
    task: `t${seq++}`,
    attempt: 'a',
    records,
    kinds: { keys: { string: records, bytes: 0 }, values: { string: records, json: 0, bytes: 0 } },
    files,
  })

  test('a blank line in one split before a line of a later split is an error', async () => {
    const job = spec()
    const stats = {
      chunks: [],
      maps: [mapStats([{ fileIndex: 0, firstBlank: 100, lastLine: 50 }]), mapStats([{ fileIndex: 0, firstBlank: null, lastLine: 200 }])],
    }
    expect(await code(finalizeHadoopBuild({ job, stats }))).toBe('RO_BAD_INPUT: /data/a.tsv (line at byte 100): empty line')
  })

  test('two different chunks for one bucket mean a wrong partitioner', async () => {
    const job = spec()
    const c = {
      bucket: 0,
      nodeId: 2,
      chunk: 0,
      records: 1,
      duplicates: 0,
      indexSize: 1,
      dataSize: 1,
      indexChecksum: 'aa',
      dataChecksum: 'bb',
      attempt: 'x',
    }
    expect(
      await code(finalizeHadoopBuild({ job, stats: { chunks: [c, { ...c, dataChecksum: 'cc', attempt: 'y' }], maps: [mapStats([], 2)] } })),
    ).toMatch(/RO_CONFLICT: node 2 chunk 0 was written by two reducers/)
  })

  test('no input at all: every chunk empty, a valid output', async () => {
    const job = spec()
    const s = await finalizeHadoopBuild({ job, stats: { chunks: [], maps: [] }, verify: true })
    expect(s.emptyChunks).toBe(4)
    expect(readdirSync(job.output).sort()).toEqual(['node-2', 'node-4'])
  })

  test('stray files in a node directory are refused', async () => {
    const job = spec()
    mkdirSync(join(job.output, 'node-2'), { recursive: true })
    writeFileSync(join(job.output, 'node-2', 'junk'), 'x')
    expect(await code(finalizeHadoopBuild({ job, stats: { chunks: [], maps: [] } }))).toMatch(/RO_CONFLICT: .*junk/)
  })

  test('statistics text: unknown lines are refused', () => {
    expect(() => parseStatsText('hello\tworld\n', 'part-00000')).toThrow(/part-00000:1: not a rostore statistics line/)
    expect(parseStatsText('\n\n', 'x')).toEqual({ chunks: [], maps: [] })
  })

  test('statistics text: a chunk belongs to a node (format 1) or a partition (format 2), never both or neither', () => {
    const chunk = {
      bucket: 3,
      chunk: 1,
      records: 2,
      duplicates: 0,
      indexSize: 96,
      dataSize: 100,
      indexChecksum: 'a',
      dataChecksum: 'b',
      attempt: 'x',
    }
    const line = (c: object): string => `rostore-chunk\t${JSON.stringify(c)}\n`
    expect(parseStatsText(line({ ...chunk, nodeId: 1 }), 'p').chunks[0]).toMatchObject({ nodeId: 1 })
    expect(parseStatsText(line({ ...chunk, partition: 7 }), 'p').chunks[0]).toMatchObject({ partition: 7 })
    expect(() => parseStatsText(line(chunk), 'p')).toThrow(/p:1: chunk statistics need one of "nodeId" and "partition"/)
    expect(() => parseStatsText(line({ ...chunk, nodeId: 1, partition: 7 }), 'p')).toThrow(/need one of/)
  })
})

describe('job spec', () => {
  test('round trip through a file, and validation like rostore build', async () => {
    const p = path('job.json')
    const written = spec()
    await writeJobSpec(p, written)
    expect(await readJobSpec(p)).toEqual(written)
    expect(() => validateJobSpec({ ...spec(), kind: 'x' }, 'j')).toThrow(/not a rostore Hadoop job spec/)
    expect(() => validateJobSpec({ ...spec(), replication: 3 }, 'j')).toThrow(/replication/)
    expect(() => validateJobSpec({ ...spec(), format: 'csv' }, 'j')).toThrow(/csvHeaders/)
    expect(() => validateJobSpec({ ...spec(), chunks: 0 }, 'j')).toThrow(/chunks/)
    expect(() => validateJobSpec({ ...spec(), layout: 'racks' }, 'j')).toThrow(/--layout racks/)
    expect(validateJobSpec({ ...spec(), layout: 'partitions' }, 'j').layout).toBe('partitions')
    await expect(readJobSpec(path('missing.json'))).rejects.toThrow(/ship it with -files/)
  })
})

describe('task environment', () => {
  test('attempt and task ids, file name matching', () => {
    expect(taskOfAttempt('attempt_1700000000000_0001_m_000003_2')).toBe('task_1700000000000_0001_m_000003')
    expect(taskEnv({ mapreduce_task_attempt_id: 'attempt_1_2_r_000001_0' })).toMatchObject({
      attemptId: 'attempt_1_2_r_000001_0',
      taskId: 'task_1_2_r_000001',
    })
    expect(taskEnv({ mapred_task_id: 'attempt_1_2_m_000001_0', map_input_file: 'x' })).toMatchObject({
      taskId: 'task_1_2_m_000001',
      inputFile: 'x',
    })
    expect(taskEnv({}).attemptId).toMatch(/^attempt_local_/)
    const idx = new FileIndex(['/data/a.tsv', 'hdfs://nn:8020/data/b.tsv'])
    expect(idx.indexOf('file:/data/a.tsv')).toBe(0)
    expect(idx.indexOf('file:///data/a.tsv')).toBe(0)
    expect(idx.indexOf('hdfs://nn.example.com:8020/data/b.tsv')).toBe(1)
    expect(idx.indexOf('/data/b.tsv')).toBe(1)
  })
})

test('SyncLineReader: long lines grow the buffer, a last line without newline counts', () => {
  const p = path('lines')
  const long = 'x'.repeat(5000)
  writeFileSync(p, `a\n${long}\n\nlast`)
  const fd = openSync(p, 'r')
  const r = new SyncLineReader(fd, 16)
  const got: string[] = []
  while (r.next()) got.push(r.buf.toString('utf8', r.start, r.end))
  closeSync(fd)
  expect(got).toEqual(['a', long, '', 'last'])
  expect(r.bytesRead).toBe(Buffer.byteLength(`a\n${long}\n\nlast`))
})
