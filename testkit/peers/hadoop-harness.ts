import { spawn } from 'node:child_process'
import { closeSync, createReadStream, existsSync, mkdirSync, openSync, readFileSync, symlinkSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { keyFieldPartition } from '../../builder/engines/hadoop/partitioner'
import { isRemote, localPath } from '../../builder/engines/hadoop/job-fs'
import { JOB_FILE_NAME, type HadoopJobSpec } from '../../builder/engines/hadoop/job-spec'
import { cliPath } from '../../common/paths'

/**
 * Hadoop Streaming, run faithfully on one machine with separate OS processes:
 *
 * - map: input splits as Hadoop's TextInputFormat makes them (byte ranges of a file; a split
 *   reads the lines that start after its first byte, the first split from byte 0, up to and
 *   including the line that starts at its end; lines end at LF, CR or CRLF), given to
 *   `rostore hadoop map` as "<offset>\t<line>" with the environment variables Hadoop sets;
 *   Parquet/Arrow as NLineInputFormat over the input list, one file per map task;
 * - shuffle: every output line of every successful map attempt routed with Hadoop's
 *   KeyFieldBasedPartitioner hash (-k1,1, separator '.'), then `LC_ALL=C sort` per reducer;
 * - reduce: R `rostore hadoop reduce` processes, stdout collected as part-0000r files;
 * - failures: a task attempt can be killed (SIGKILL) mid-run and is then rerun under a new
 *   attempt id, its partial output discarded, as Hadoop does; a reduce task can also run as
 *   two speculative attempts at once.
 * Each task runs in its own working directory holding the job spec (as `-files` ships it).
 */
export interface HarnessOptions {
  readonly spec: HadoopJobSpec
  readonly specPath: string
  readonly workDir: string
  /** Split size for text input; default 1 MiB. */
  readonly splitBytes?: number
  /** Tasks run at a time; default 2. */
  readonly concurrency?: number
  readonly env?: NodeJS.ProcessEnv
  /** Kill the first attempt of map task `task` while it is half way through its input. */
  readonly killMap?: number
  /** Kill the first attempt of reduce task `task` after it committed its first chunk. */
  readonly killReduce?: number
  /** Run reduce task `task` as two concurrent attempts. */
  readonly speculativeReduce?: number
  /** Task commands as the job's -mapper/-reducer give them, run with sh in the task directory. */
  readonly mapCommand?: string
  readonly reduceCommand?: string
  /** Local file of an input URI (default: the path of a local path or file: URI). */
  readonly localFile?: (uri: string) => string
  /** Reduce tasks; default the job spec's. */
  readonly reducers?: number
  /** Where the part-* files go; default <workDir>/stats. */
  readonly statsDir?: string
}

export interface HarnessResult {
  readonly statsDir: string
  readonly mapTasks: number
  readonly killed: string[]
  readonly seconds: { map: number; shuffle: number; reduce: number }
}

const JOB = 'job_1700000000000_0001'
const MAP = ['hadoop', 'map', '--job', JOB_FILE_NAME]
const REDUCE = ['hadoop', 'reduce', '--job', JOB_FILE_NAME]

export async function runHarness(o: HarnessOptions): Promise<HarnessResult> {
  const R = o.reducers ?? o.spec.reducers
  const dir = o.workDir
  mkdirSync(dir, { recursive: true })
  const killed: string[] = []
  const t0 = Date.now()

  // ---- map
  const splits = makeSplits(o.spec, o.specPath, dir, o.splitBytes ?? 1 << 20, o.localFile ?? localPath)
  const mapOutputs: string[] = []
  await pool(splits, o.concurrency ?? 2, async (split, k) => {
    let attempt = 0
    for (;;) {
      const id = `attempt_${JOB.slice(4)}_m_${pad(k)}_${attempt}`
      const out = join(dir, `${id}.out`)
      const env = {
        ...baseEnv(o, R),
        mapreduce_task_id: `task_${JOB.slice(4)}_m_${pad(k)}`,
        mapreduce_task_attempt_id: id,
        mapreduce_task_partition: String(k),
        mapreduce_task_ismap: 'true',
        ...(split.file !== undefined
          ? {
              mapreduce_map_input_file: split.file,
              mapreduce_map_input_start: String(split.start),
              mapreduce_map_input_length: String(split.length),
            }
          : {}),
      }
      // Half its input and then nothing: the attempt cannot finish; killed once it had time to work.
      const started = Date.now()
      const kill = o.killMap === k && attempt === 0 ? { when: () => Date.now() - started > 300, partialInput: true } : undefined
      const r = await runTask(o.mapCommand ?? MAP, o, id, env, split.input, out, kill)
      if (r === 'killed') {
        killed.push(id)
        attempt++
        continue
      }
      mapOutputs[k] = out
      return
    }
  })
  const t1 = Date.now()

  // ---- shuffle: partition and sort
  const unsorted = Array.from({ length: R }, (_, r) => join(dir, `reduce-${r}.unsorted`))
  await partition(mapOutputs, unsorted, R)
  const sorted = unsorted.map((f) => f.replace(/\.unsorted$/, '.sorted'))
  await pool(unsorted, o.concurrency ?? 2, async (f, r) => {
    await exec('sort', ['-T', dir, '-S', '256M', '-o', sorted[r]!, f], { ...process.env, LC_ALL: 'C' })
  })
  const t2 = Date.now()

  // ---- reduce
  const statsDir = o.statsDir ?? join(dir, 'stats')
  mkdirSync(statsDir, { recursive: true })
  await pool(sorted, o.concurrency ?? 2, async (input, r) => {
    let attempt = 0
    for (;;) {
      const id = `attempt_${JOB.slice(4)}_r_${pad(r)}_${attempt}`
      const env = {
        ...baseEnv(o, R),
        mapreduce_task_id: `task_${JOB.slice(4)}_r_${pad(r)}`,
        mapreduce_task_attempt_id: id,
        mapreduce_task_partition: String(r),
        mapreduce_task_ismap: 'false',
      }
      const out = join(dir, `${id}.out`)
      if (o.speculativeReduce === r && attempt === 0) {
        const id2 = id.replace(/_0$/, '_1')
        const out2 = join(dir, `${id2}.out`)
        const [a, b] = await Promise.all([
          runTask(o.reduceCommand ?? REDUCE, o, id, env, input, out),
          runTask(o.reduceCommand ?? REDUCE, o, id2, { ...env, mapreduce_task_attempt_id: id2 }, input, out2),
        ])
        if (a !== 'ok' || b !== 'ok') throw new Error('a speculative reduce attempt failed')
        // Hadoop keeps the output of the attempt that finished first: either is the same.
        copyFile(out2, join(statsDir, `part-${pad(r)}`))
        return
      }
      const kill =
        o.killReduce === r && attempt === 0 ? { when: () => readText(out).includes('rostore-chunk'), partialInput: true } : undefined
      const res = await runTask(o.reduceCommand ?? REDUCE, o, id, env, input, out, kill)
      if (res === 'killed') {
        killed.push(id)
        attempt++
        continue
      }
      copyFile(out, join(statsDir, `part-${pad(r)}`))
      return
    }
  })
  const t3 = Date.now()
  return {
    statsDir,
    mapTasks: splits.length,
    killed,
    seconds: { map: (t1 - t0) / 1000, shuffle: (t2 - t1) / 1000, reduce: (t3 - t2) / 1000 },
  }
}

/** Runs `rostore hadoop finalize` on the harness's part files. */
export async function runFinalize(specPath: string, statsDir: string, env?: NodeJS.ProcessEnv): Promise<string> {
  return exec(process.execPath, [cliPath(), 'hadoop', 'finalize', '--job', specPath, '--stats', statsDir], { ...process.env, ...env })
}

function baseEnv(o: HarnessOptions, R: number): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'],
    ...o.env,
    mapreduce_job_id: JOB,
    mapreduce_job_reduces: String(R),
    stream_map_input_ignoreKey: 'false',
    stream_num_map_output_key_fields: '1',
    mapreduce_map_output_key_field_separator: '.',
    mapreduce_partition_keypartitioner_options: '-k1,1',
  }
}

function pad(n: number): string {
  return String(n).padStart(6, '0')
}

interface Split {
  /** The mapper's stdin, prepared as a file. */
  readonly input: string
  readonly file?: string
  readonly start: number
  readonly length: number
}

function makeSplits(spec: HadoopJobSpec, specPath: string, dir: string, splitBytes: number, localFile: (uri: string) => string): Split[] {
  const splits: Split[] = []
  if (spec.format === 'parquet' || spec.format === 'arrow') {
    // NLineInputFormat, one line per map: the key is the line's offset in the input list,
    // the job's inputs.txt (beside the spec) when it wrote one.
    const list = join(dirname(specPath), 'inputs.txt')
    const lines = existsSync(list)
      ? readFileSync(list, 'utf8')
          .split('\n')
          .filter((l) => l.length > 0)
      : spec.inputs
    let offset = 0
    for (const f of lines) {
      const input = join(dir, `split-${splits.length}.in`)
      const fd = openSync(input, 'w')
      writeSync(fd, `${offset}\t${f}\n`)
      closeSync(fd)
      offset += Buffer.byteLength(f) + 1
      splits.push({ input, start: 0, length: 0 })
    }
    return splits
  }
  for (const f of spec.inputs) {
    const data = readFileSync(localFile(f))
    const size = data.length
    // FileInputFormat: splits of splitBytes while more than 1.1 splits remain, then the rest.
    const ranges: [number, number][] = []
    let at = 0
    while (size - at > splitBytes * 1.1) {
      ranges.push([at, splitBytes])
      at += splitBytes
    }
    ranges.push([at, size - at])
    const lines = lineStarts(data)
    for (const [start, length] of ranges) {
      const input = join(dir, `split-${splits.length}.in`)
      const fd = openSync(input, 'w')
      const parts: Buffer[] = []
      let pending = 0
      // LineRecordReader: a split not at 0 skips the line holding its first byte, so it
      // reads the lines starting in (start, end]; the first split those in [0, end].
      let lo = 0
      let hi = lines.length
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (lines[mid]![0] <= start) lo = mid + 1
        else hi = mid
      }
      if (start === 0) lo = 0
      for (let i = lo; i < lines.length; i++) {
        const [s, e] = lines[i]!
        if (s > start + length) break
        parts.push(Buffer.from(`${s}\t`), data.subarray(s, e), NL)
        pending += e - s + 16
        if (pending > 4 << 20) {
          writeSync(fd, Buffer.concat(parts))
          parts.length = 0
          pending = 0
        }
      }
      if (parts.length > 0) writeSync(fd, Buffer.concat(parts))
      closeSync(fd)
      // Hadoop names the file by its URI: file:/... for the local file system.
      splits.push({ input, file: isRemote(f) ? f : `file:${localPath(f)}`, start, length })
    }
  }
  return splits
}

const NL = Buffer.from('\n')

/** [start, end) of every line, without its terminator: LF, CR or CRLF, as Hadoop's LineReader. */
function lineStarts(data: Buffer): [number, number][] {
  const out: [number, number][] = []
  let s = 0
  for (let i = 0; i < data.length; i++) {
    const c = data[i]
    if (c === 0x0a || c === 0x0d) {
      out.push([s, i])
      if (c === 0x0d && data[i + 1] === 0x0a) i++
      s = i + 1
    }
  }
  if (s < data.length) out.push([s, data.length])
  return out
}

async function partition(mapOutputs: readonly string[], targets: readonly string[], R: number): Promise<void> {
  const fds = targets.map((t) => openSync(t, 'w'))
  const pending: Buffer[][] = targets.map(() => [])
  const sizes = targets.map(() => 0)
  const flush = (r: number): void => {
    if (pending[r]!.length === 0) return
    writeSync(fds[r]!, Buffer.concat(pending[r]!))
    pending[r] = []
    sizes[r] = 0
  }
  try {
    for (const file of mapOutputs) {
      let carry: Buffer = Buffer.alloc(0)
      for await (const chunk of createReadStream(file, { highWaterMark: 4 << 20 })) {
        const buf: Buffer = carry.length > 0 ? Buffer.concat([carry, chunk as Buffer]) : (chunk as Buffer)
        let s = 0
        for (let nl = buf.indexOf(0x0a, s); nl >= 0; nl = buf.indexOf(0x0a, s)) {
          const r = keyFieldPartition(buf, s, nl, R)
          pending[r]!.push(buf.subarray(s, nl + 1))
          sizes[r]! += nl + 1 - s
          if (sizes[r]! > 4 << 20) flush(r)
          s = nl + 1
        }
        carry = Buffer.from(buf.subarray(s))
      }
      if (carry.length > 0) throw new Error(`${file}: map output does not end with a newline`)
    }
    for (let r = 0; r < R; r++) flush(r)
  } finally {
    for (const fd of fds) closeSync(fd)
  }
}

/**
 * Runs one task attempt in its own working directory. With `kill`, the attempt is killed
 * (SIGKILL) as soon as `when()` holds; `partialInput` feeds it only part of its input
 * meanwhile, so it cannot finish first.
 */
async function runTask(
  command: string | string[],
  o: HarnessOptions,
  attemptId: string,
  env: NodeJS.ProcessEnv,
  input: string,
  output: string,
  kill?: { when: () => boolean; partialInput?: boolean },
): Promise<'ok' | 'killed'> {
  const cwd = join(o.workDir, 'tasks', attemptId)
  mkdirSync(cwd, { recursive: true })
  if (!existsSync(join(cwd, JOB_FILE_NAME))) symlinkSync(o.specPath, join(cwd, JOB_FILE_NAME))
  const outFd = openSync(output, 'w')
  const usePipe = kill !== undefined
  const inFd = usePipe ? 'pipe' : openSync(input, 'r')
  // A shell command runs in its own process group, so a kill reaches the task under the shell.
  const child =
    typeof command === 'string'
      ? spawn('/bin/sh', ['-c', command], { cwd, env, stdio: [inFd, outFd, 'pipe'], detached: true })
      : spawn(process.execPath, [cliPath(), ...command], { cwd, env, stdio: [inFd, outFd, 'pipe'] })
  closeSync(outFd)
  if (typeof inFd === 'number') closeSync(inFd)
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  if (kill && child.stdin) {
    const data = readFileSync(input)
    // Half the input, ending at a line end, then nothing until the attempt is killed.
    const cut = kill.partialInput ? Math.max(data.indexOf(0x0a, Math.floor(data.length / 2)) + 1, 1) : data.length
    child.stdin.on('error', () => {})
    child.stdin.write(data.subarray(0, cut))
    if (!kill.partialInput) child.stdin.end()
    const deadline = Date.now() + 20000
    let done = false
    void exited.then(() => (done = true))
    while (!done && !kill.when()) {
      if (Date.now() > deadline) throw new Error(`${attemptId}: never reached the point to kill it`)
      await new Promise((r) => setTimeout(r, 10))
    }
    if (!done) {
      if (typeof command === 'string') process.kill(-child.pid!, 'SIGKILL')
      else child.kill('SIGKILL')
      await exited
      return 'killed'
    }
  }
  const code = await exited
  if (code !== 0) throw new Error(`${attemptId} failed (exit ${code}): ${stderr}`)
  return 'ok'
}

async function pool<T>(items: readonly T[], n: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++
        await fn(items[i]!, i)
      }
    }),
  )
}

function exec(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} failed (${code}): ${err}`))))
  })
}

function readText(p: string): string {
  try {
    return readFileSync(p, 'utf8')
  } catch {
    return ''
  }
}

function copyFile(from: string, to: string): void {
  const fd = openSync(to, 'w')
  writeSync(fd, readFileSync(from))
  closeSync(fd)
}
