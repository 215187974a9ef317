import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../../../builder/engines/local/build-job'
import type { BuildOptions } from '../../../../../builder/build-options'
import { buildOnRay, type RayBuildOptions, type RayBuildSummary } from '../../../../../builder/engines/ray/ray-build'
import { cliPath } from '../../../../../common/paths'
import { StoreError } from '../../../../../common/errors'
import type { InputFormat } from '../../../../../formats/input/types'
import { writeInput } from '../../../../../testkit/stores/input-files'
import { expectSameTree } from '../../../../../testkit/stores/file-tree'
import { realisticValues } from '../../../../../testkit/stores/realistic-values'
import { DICTIONARY_FILE } from '../../../../../formats/store/chunk/dictionary-file'
import { readManifest } from '../../../../../formats/store/layout/manifest-io'
import { startRayCluster, type RayCluster } from '../../../../../testkit/peers/ray-cluster'
import { makeTmp } from '../../../../../testkit/stores/tmp'
import { ENGINE_TEST_CLUSTER, engineRecords } from '../../../../../testkit/stores/engine-inputs'

// One real Ray cluster for the whole file: a head (no CPUs) and two worker nodes (one CPU
// each), separate process groups, loopback only. Starting it takes ~20 s on 2 cores.
const tmp = makeTmp('rostore-ray-')
let cluster: RayCluster | undefined
beforeAll(async () => {
  cluster = await startRayCluster({ dir: join(tmp.dir, 'ray') })
}, 240_000)
afterAll(async () => {
  await cluster?.stop()
  tmp.cleanup()
})

let seq = 0
const path = (name: string): string => join(tmp.dir, `${seq++}-${name}`)

const clusterFile = ENGINE_TEST_CLUSTER

const records = (n: number, file: number): [string, string][] => engineRecords(n, file, ' ')

async function inputs(format: InputFormat, files: number, perFile: number): Promise<string> {
  const dir = path(`in-${format}`)
  mkdirSync(dir)
  for (let f = 0; f < files; f++) await writeInput(join(dir, `part-${f}.${format}`), format, records(perFile, f))
  return dir
}

function options(input: string, format: InputFormat, extra: Partial<BuildOptions> = {}): BuildOptions {
  return {
    inputs: [input],
    format,
    cluster: clusterFile,
    store: 'st',
    output: path('local'),
    version: 7,
    replication: 2,
    chunks: 2,
    onDuplicate: 'last',
    ...extra,
  }
}

function rayOptions(build: BuildOptions, extra: Partial<RayBuildOptions> = {}): RayBuildOptions {
  return { build, address: cluster!.address, python: cluster!.python, reducers: 3, onProgress: () => {}, ...extra }
}

/** Builds with the local engine and on Ray; the outputs must be byte-identical. */
async function compare(format: InputFormat, extra: Partial<RayBuildOptions> = {}, perFile = 1200): Promise<RayBuildSummary> {
  const o = options(await inputs(format, 2, perFile), format)
  await buildStore({ ...o, workers: 2 })
  const rayOut = path('ray')
  const s = await buildOnRay(rayOptions({ ...o, output: rayOut }, extra))
  expectSameTree(o.output, rayOut)
  return s
}

describe.each(['tsv', 'csv', 'jsonl', 'parquet', 'arrow'] as const)('%s input', (format) => {
  test('the Ray build is byte-identical to rostore build', async () => {
    // Text inputs are cut into byte ranges, Parquet into row groups (of 2048 rows here):
    // several map tasks per file. Arrow files (one record batch here) are one task each.
    const perFile = format === 'parquet' ? 5000 : 1200
    const s = await compare(format, { splitBytes: format === 'parquet' ? 1 : format === 'arrow' ? undefined : 40 << 10 }, perFile)
    expect(s.job.records).toBe(2 * perFile)
    expect(s.job.nodes).toBe(3)
    expect(s.job.reduceTasks).toBe(3)
    if (format === 'parquet') expect(s.job.mapTasks).toBe(6)
    else if (format === 'arrow') expect(s.job.mapTasks).toBe(2)
    else expect(s.job.mapTasks).toBeGreaterThan(2)
    expect(s.finalize.inputRecords).toBe(2 * perFile)
  }, 180_000)
})

test('--compression zstd: the tasks compress with the dictionary trained where the job is prepared, byte-identical to rostore build', async () => {
  const dir = path('in-zstd')
  mkdirSync(dir)
  for (let f = 0; f < 2; f++) {
    const gen = realisticValues(200 + f)
    await writeInput(
      join(dir, `part-${f}.tsv`),
      'tsv',
      Array.from({ length: 1500 }, (_, i): [string, string] => [`u-${f}-${i}`, gen.next().toString()]),
    )
  }
  const o = options(dir, 'tsv', { compression: 'zstd' })
  await buildStore({ ...o, workers: 2 })
  const rayOut = path('ray')
  const s = await buildOnRay(rayOptions({ ...o, output: rayOut }, { splitBytes: 40 << 10 }))
  expectSameTree(o.output, rayOut)
  expect(s.job.mapTasks).toBeGreaterThan(2)
  expect(readFileSync(join(rayOut, DICTIONARY_FILE)).length).toBeGreaterThan(1000)
}, 180_000)

test('--base: the job takes the base chunk count and zstd dictionary, and the patches match rostore build --base, --patch-only too', async () => {
  const gen = realisticValues(300)
  const v1 = Array.from({ length: 3000 }, (_, i): [string, string] => [`u-${i}`, gen.next().toString()])
  // 2% changed, 1% removed, 30 added.
  const v2 = v1.filter((_, i) => i % 100 !== 7).map(([k, v], i): [string, string] => (i % 50 === 3 ? [k, `${v} changed`] : [k, v]))
  for (let i = 0; i < 30; i++) v2.push([`new-${i}`, gen.next().toString()])
  const input = async (name: string, recs: [string, string][]): Promise<string> => {
    const dir = path(name)
    mkdirSync(dir)
    await writeInput(join(dir, 'part-0.tsv'), 'tsv', recs)
    return dir
  }
  const base = options(await input('in-v1', v1), 'tsv', { compression: 'zstd', layout: 'partitions', version: 6, chunks: 3 })
  await buildStore({ ...base, workers: 2 })
  const next = await input('in-v2', v2)
  for (const patchOnly of [false, true]) {
    // No chunk count given: both engines take the base's (3), not their own default.
    const o = options(next, 'tsv', { compression: 'zstd', layout: 'partitions', base: base.output, patchOnly, chunks: undefined })
    const local = await buildStore({ ...o, workers: 2 })
    const rayOut = path('ray')
    const s = await buildOnRay(rayOptions({ ...o, output: rayOut }))
    expectSameTree(o.output, rayOut)
    expect(s.patches?.partitions).toBe(local.patches?.partitions)
    expect(s.patches?.partitions).toBeGreaterThan(0)
    const manifest = await readManifest(rayOut)
    expect(manifest.chunks).toBe(3)
    expect(manifest.base?.version).toBe(6)
    expect(manifest.build?.zstdDictionary).toBe('base')
    expect(readFileSync(join(rayOut, DICTIONARY_FILE)).equals(readFileSync(join(base.output, DICTIONARY_FILE)))).toBe(true)
  }
}, 240_000)

test('rostore build --engine ray: progress on stderr, the job summary on stdout, and rostore verify accepts the output', async () => {
  const input = await inputs('tsv', 1, 1500)
  const out = path('ray-cli')
  const r = await runCli([
    'build', '--engine', 'ray', '--ray-address', cluster!.address, '--ray-python', cluster!.python,
    '--input', input, '--format', 'tsv', '--cluster', writeCluster(), '--store', 'st', '--output', out,
    '--version', '9', '--chunks', '2', '--on-duplicate', 'first', '--compression', 'gzip', '--reducers', '2',
  ]) // prettier-ignore
  expect(r.status).toBe(0)
  expect(r.stderr).toMatch(/^ray: 3 nodes, 2 CPUs; 1 map tasks over .*, 2 reduce tasks$/m)
  expect(r.stderr).toMatch(/^ray: map 1\/1 tasks, 1,500 records/m)
  expect(r.stderr).toMatch(/^ray: reduce 2\/2 tasks/m)
  expect(r.stdout).toMatch(/built store st version 9 in .* on Ray \(3 nodes, 2 CPUs\)/)
  expect(r.stdout).toMatch(/tasks: 1 map, 2 reduce; 0 retried attempts; .* MiB spilled/)
  expect(r.stdout).toMatch(/seconds: prepare .*, map .*, reduce .*, finalize/)
  const v = spawnSync(process.execPath, [cliPath(), 'verify', out], { encoding: 'utf8' })
  expect(v.status).toBe(0)
  // Format 2: one build output, every partition once (format 1 had a line per node directory).
  expect(v.stdout.match(/^ok /gm)).toHaveLength(1)
}, 180_000)

describe('a worker node killed mid-job: Ray retries its tasks elsewhere and the output is identical', () => {
  test.each(['map', 'reduce'] as const)(
    'killed in the %s phase',
    async (phase) => {
      const hold = path(`hold-${phase}`)
      mkdirSync(hold)
      const held = join(hold, `held-${phase}`, 'pid')
      const before = cluster!.workers.length
      let killed = false
      let problem: string | undefined
      const lines: string[] = []
      const s = await compare('jsonl', {
        splitBytes: 30 << 10,
        env: { ...process.env, ROSTORE_RAY_HOLD: hold, ROSTORE_RAY_HOLD_PHASE: phase },
        // The first task of the phase that finishes its work waits at the hold point; its
        // node is killed as soon as the pid file shows up in the driver's progress loop.
        onProgress: (line) => {
          lines.push(line)
          if (killed || !existsSync(held)) return
          killed = true
          const pid = Number(readFileSync(held, 'utf8'))
          const node = cluster!.workerOf(pid)
          if (node !== undefined) void cluster!.kill(node)
          else {
            problem = `the held task's process ${pid} is on no worker node`
            writeFileSync(join(hold, `held-${phase}`, 'release'), '')
          }
        },
      })
      expect(problem).toBeUndefined()
      expect(killed).toBe(true)
      expect(cluster!.workers.length).toBe(before - 1)
      expect(s.job.retries).toBeGreaterThanOrEqual(1)
      expect(s.job.records).toBe(2400)
      await cluster!.addWorker() // the next test has two workers again
    },
    300_000,
  )
})

test('a job that fails leaves no output and no work directory; the error names the input', async () => {
  const dir = path('bad')
  mkdirSync(dir)
  writeFileSync(join(dir, 'a.jsonl'), '{"key":"a","value":"1"}\n{"key":"b",\n{"key":"c","value":"3"}\n')
  const out = join(dir, 'out')
  const err = await buildOnRay(rayOptions(options(dir, 'jsonl', { output: out }))).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(StoreError)
  expect((err as StoreError).code).toBe('RO_BAD_INPUT')
  expect((err as StoreError).message).toMatch(/a\.jsonl/)
  expect(readdirSync(dir)).toEqual(['a.jsonl'])
}, 180_000)

test('a build cancelled mid-map (AbortSignal, as Ctrl-C does) stops the job and leaves nothing', async () => {
  const input = await inputs('tsv', 1, 600)
  const parent = path('cancel')
  mkdirSync(parent)
  const hold = join(parent, 'hold')
  mkdirSync(hold)
  const cancel = new AbortController()
  const err = await buildOnRay(
    rayOptions(options(input, 'tsv', { output: join(parent, 'out'), signal: cancel.signal }), {
      env: { ...process.env, ROSTORE_RAY_HOLD: hold, ROSTORE_RAY_HOLD_PHASE: 'map' },
      // Cancelled once a map task has done its work and waits: the job is mid-map.
      onProgress: () => {
        if (existsSync(join(hold, 'held-map', 'pid'))) cancel.abort()
      },
    }),
  ).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(StoreError)
  expect((err as StoreError).code).toBe('RO_ABORTED')
  expect(readdirSync(parent)).toEqual(['hold'])
}, 180_000)

function writeCluster(): string {
  const p = path('cluster.json')
  writeFileSync(p, JSON.stringify(clusterFile))
  return p
}

function runCli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [cliPath(), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('close', (status) => res({ status, stdout, stderr }))
  })
}
