/**
 * Measurement 3b — the RESP (Redis protocol) port against redis-server, with Redis's own
 * load generator: `rostore serve --resp-port P --resp-default-store bench` and
 * `redis-server` (no persistence, loaded with the same records) each pinned to core 0,
 * `redis-benchmark` (C) pinned to core 1, the same command lines and keys for both
 * (`__rand_int__`: 12-digit keys, uniform, 10% absent). Rows are interleaved (rostore,
 * Redis, rostore, ...) so drift in the machine's load hits both alike.
 *
 *   GET, 50 connections, no pipelining: requests/s and server CPU µs per request
 *   GET -P 16: requests/s
 *   MGET of 100 keys: keys/s
 *   GET paced at half of rostore's peak (open loop, 16 connections): p50/p99, both servers
 *   forwarded GET and MGET (a 2-node cluster, the client on the node without the keys) vs
 *   local: server CPU per key of both nodes, as a ratio
 *   diagnostic: the same RESP listener over lookups that cost nothing (resp-memory-node.ts),
 *   so the RESP layer's own cost and the store lookup's share can be told apart
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { freePort } from '../../common/net'
import { ABSENT_FRACTION, ensureDir, workRoot, type Dataset } from '../kit/data'
import { pacedToolNote, runPacedLoad, type PacedTool } from '../load/paced-load'
import { ensureRedis, ensureRespInput, redisBenchmark, RedisServer, type RedisBenchResult, type RespTarget } from '../peers/redis'
import { goal, type BenchContext, type GoalRow } from '../kit/report'
import { forwardCost } from './resp-forward'
import { BATCH, CLIENT_CPU, CONNECTIONS, HEAD, PIPELINE, cells, push, row, target, verifyResp, type Row } from './resp-rows'
import { STORE } from '../kit/rostore'
import { serveDataDir, ServeProcess } from './serve-process'
import { fmt, fmtRatio, mdTable, summarize } from '../kit/stats'
import { cpuSecondsOf, log, pinArgs } from '../kit/system'

const PACED_CONNECTIONS = 16

/** The diagnostic listener (resp-memory-node.ts) on the server core; resolves once it listens. */
async function startMemoryNode(port: number, ds: Dataset): Promise<RespTarget & { stop(): void }> {
  const argv = [
    ...pinArgs(0),
    process.execPath,
    join(__dirname, 'resp-memory-node.js'),
    String(port),
    String(ds.shape.records),
    String(ds.shape.valueBytes),
  ]
  const [bin, ...args] = argv as [string, ...string[]]
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  await new Promise<void>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error('resp-memory-node did not listen within 30 s')), 30_000)
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
      if (out.includes('listening')) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.stderr.on('data', () => undefined)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`resp-memory-node exited with ${code}`))
    })
  })
  return { port, cpuSeconds: () => cpuSecondsOf(child.pid ?? -1), stop: () => void child.kill('SIGKILL') }
}

export interface RespBenchResult {
  readonly markdown: string
  readonly goals: GoalRow[]
}

/** The RESP rows of one data shape; `forward` also measures forwarding (once per run is enough). */
export async function runRespBench(ctx: BenchContext, ds: Dataset, duration: number, forward: boolean): Promise<RespBenchResult> {
  const name = ds.shape.name
  const missing = await ensureRedis()
  if (missing) return { markdown: `RESP rows not run: ${missing}`, goals: respGoals(name) }
  const rows = {
    get: row('rostore RESP: GET, 50 connections'),
    rget: row('Redis: GET, 50 connections'),
    pipe: row(`rostore RESP: GET -P ${PIPELINE}`),
    rpipe: row(`Redis: GET -P ${PIPELINE}`),
    mget: row(`rostore RESP: MGET of ${BATCH} keys`),
    rmget: row(`Redis: MGET of ${BATCH} keys`),
    half: row(`rostore RESP: GET paced at half of its peak (${PACED_CONNECTIONS} connections)`),
    rhalf: row(`Redis: GET paced at the same rate`),
    layerGet: row('diagnostic, RESP layer alone (lookups cost nothing): GET'),
    layerPipe: row(`diagnostic, RESP layer alone: GET -P ${PIPELINE}`),
    layerMget: row(`diagnostic, RESP layer alone: MGET of ${BATCH} keys`),
    w2get: row('rostore RESP --workers 2 (both cores, beside the load generator): GET, 50 connections'),
    w2pipe: row(`rostore RESP --workers 2 (both cores): GET -P ${PIPELINE}`),
    w2mget: row(`rostore RESP --workers 2 (both cores): MGET of ${BATCH} keys`),
    r2get: row('Redis --io-threads 2 (both cores, beside the load generator): GET, 50 connections'),
    r2pipe: row(`Redis --io-threads 2 (both cores): GET -P ${PIPELINE}`),
    r2mget: row(`Redis --io-threads 2 (both cores): MGET of ${BATCH} keys`),
  }
  const { dataDir, cluster } = await serveDataDir(ds, 'serve-resp')
  const respPort = await freePort()
  let node: ServeProcess | undefined
  let node2: ServeProcess | undefined
  let redis: RedisServer | undefined
  let memory: (RespTarget & { stop(): void }) | undefined
  const notes: string[] = []
  let pacedTool: PacedTool | undefined
  try {
    const respArgs = ['--resp-port', String(respPort), '--resp-default-store', STORE]
    node = await ServeProcess.start(dataDir, cluster, { workers: 1, extraArgs: respArgs })
    await verifyResp(respPort, ds)
    redis = await RedisServer.start(ensureDir(join(workRoot(), 'serve-resp', 'redis')), 0)
    const loaded = await redis.load(ensureRespInput(ds))
    if (loaded.keys !== ds.shape.records) throw new Error(`Redis holds ${loaded.keys} keys after loading ${ds.shape.records}`)
    const ro = target(respPort, [node])
    memory = await startMemoryNode(await freePort(), ds)
    const keyspace = Math.round(ds.shape.records / (1 - ABSENT_FRACTION))
    const getCmd = ['GET', '__rand_int__']
    const mgetCmd = ['MGET', ...Array.from({ length: BATCH }, () => '__rand_int__')]
    const bench = (t: RespTarget, cmd: readonly string[], requests: number, pipeline = 1): Promise<RedisBenchResult> =>
      redisBenchmark(t, cmd, {
        requests,
        clients: CONNECTIONS,
        keyspace,
        cpu: CLIENT_CPU,
        pipeline,
        timeoutMs: (duration * 10 + 120) * 1000,
      })
    // Warm-up, then request counts sized so a run lasts about `duration` on the slower side.
    // As many keys as the store holds, in MGETs, on both servers: a node maps its data
    // file page by page as reads first touch it (Redis holds everything in its heap), and
    // without this the first rows measured that warm-up, not the steady state.
    const warmMgets = Math.ceil(ds.shape.records / BATCH)
    await bench(ro, mgetCmd, warmMgets)
    await bench(redis, mgetCmd, warmMgets)
    await bench(ro, getCmd, ctx.quick ? 5_000 : 20_000)
    const size = async (cmd: readonly string[], first: number, pipeline = 1): Promise<number> => {
      const a = await bench(ro, cmd, first, pipeline)
      return Math.max(first, Math.round(a.rps * duration))
    }
    const nGet = await size(getCmd, ctx.quick ? 5_000 : 20_000)
    const nPipe = await size(getCmd, ctx.quick ? 20_000 : 100_000, PIPELINE)
    const nMget = await size(mgetCmd, ctx.quick ? 500 : 2_000)
    for (let i = 0; i < ctx.runs; i++) {
      push(rows.get, await bench(ro, getCmd, nGet), 1)
      push(rows.rget, await bench(redis, getCmd, nGet), 1)
      push(rows.pipe, await bench(ro, getCmd, nPipe, PIPELINE), 1)
      push(rows.rpipe, await bench(redis, getCmd, nPipe, PIPELINE), 1)
      push(rows.mget, await bench(ro, mgetCmd, nMget), BATCH)
      push(rows.rmget, await bench(redis, mgetCmd, nMget), BATCH)
      push(rows.layerGet, await bench(memory, getCmd, nGet), 1)
      push(rows.layerPipe, await bench(memory, getCmd, nPipe, PIPELINE), 1)
      push(rows.layerMget, await bench(memory, mgetCmd, nMget), BATCH)
    }
    const rate = Math.max(1, Math.floor(summarize(rows.get.rps).median / 2))
    for (const [r, port, proc] of [
      [rows.half, respPort, node],
      [rows.rhalf, redis.port, redis],
    ] as const) {
      const c0 = proc.cpuSeconds()
      const res = await runPacedLoad(
        {
          port,
          store: STORE,
          records: ds.shape.records,
          seed: ctx.seed,
          rate,
          connections: PACED_CONNECTIONS,
          durationSec: duration,
          protocol: 'resp',
        },
        CLIENT_CPU,
      )
      pacedTool = res.tool
      if (res.errors > 0 || res.otherStatus > 0) throw new Error(`${r.label}: ${res.errors} errors, ${res.otherStatus} error replies`)
      const cpu = proc.cpuSeconds() - c0
      r.rps.push(res.rps)
      r.keysPerSec.push(res.rps)
      r.p50.push(res.p50Ms)
      r.p99.push(res.p99Ms)
      r.cpu.push(cpu / res.secs)
      r.usPerReq.push((cpu / res.requests) * 1e6)
      log(`resp ${r.label}: ${res.rps.toFixed(0)} req/s, p50 ${res.p50Ms.toFixed(3)} ms, p99 ${res.p99Ms.toFixed(3)} ms`)
    }
    // The stretch rows: the node with 2 serving workers sharing the RESP port against
    // Redis with 2 I/O threads, both unpinned (so both compete with redis-benchmark for
    // core 1: not comparable with the pinned rows above, only with each other).
    await node.stop()
    node = undefined
    redis.stop()
    redis = undefined
    node2 = await ServeProcess.start(dataDir, cluster, { workers: 2, pinned: false, extraArgs: respArgs })
    await verifyResp(respPort, ds)
    const ro2 = target(respPort, [node2])
    redis = await RedisServer.start(ensureDir(join(workRoot(), 'serve-resp', 'redis')), undefined, 2)
    await redis.load(ensureRespInput(ds))
    for (const t of [ro2, redis]) {
      await bench(t, mgetCmd, warmMgets)
      await bench(t, getCmd, ctx.quick ? 5_000 : 20_000)
    }
    for (let i = 0; i < ctx.runs; i++) {
      push(rows.w2get, await bench(ro2, getCmd, nGet), 1)
      push(rows.r2get, await bench(redis, getCmd, nGet), 1)
      push(rows.w2pipe, await bench(ro2, getCmd, nPipe, PIPELINE), 1)
      push(rows.r2pipe, await bench(redis, getCmd, nPipe, PIPELINE), 1)
      push(rows.w2mget, await bench(ro2, mgetCmd, nMget), BATCH)
      push(rows.r2mget, await bench(redis, mgetCmd, nMget), BATCH)
    }
  } catch (err) {
    notes.push(`RESP rows stopped early: ${(err as Error).message.split('\n').slice(0, 4).join(' / ').slice(0, 400)}`)
    log(`resp ${name}: ${notes[notes.length - 1]}`)
  } finally {
    await node?.stop()
    await node2?.stop()
    redis?.stop()
    memory?.stop()
  }
  const table = mdTable(HEAD, Object.values(rows).map(cells))
  const fw = forward ? await forwardCost(ctx, ds, duration) : undefined
  const ratio = (a: Row, b: Row, pick: (r: Row) => number[]): number => summarize(pick(a)).median / summarize(pick(b)).median
  const lines = [
    `#### RESP port against Redis (${name})`,
    '',
    table,
    '',
    `Ratios (rostore ÷ Redis, same run): GET ${fmtRatio(summarize(rows.get.rps).median, summarize(rows.rget.rps).median)}, ` +
      `server µs per GET ${fmt(
        ratio(rows.get, rows.rget, (r) => r.usPerReq),
        2,
      )}×, GET -P ${PIPELINE} ${fmtRatio(summarize(rows.pipe.rps).median, summarize(rows.rpipe.rps).median)}, ` +
      `MGET keys/s ${fmtRatio(summarize(rows.mget.keysPerSec).median, summarize(rows.rmget.keysPerSec).median)}; ` +
      `the RESP layer alone (diagnostic rows) ÷ Redis, server µs per request: GET ${fmt(
        ratio(rows.layerGet, rows.rget, (r) => r.usPerReq),
        2,
      )}×, ` +
      `GET -P ${PIPELINE} ${fmt(
        ratio(rows.layerPipe, rows.rpipe, (r) => r.usPerReq),
        2,
      )}×, MGET ${fmt(
        ratio(rows.layerMget, rows.rmget, (r) => r.usPerReq),
        2,
      )}×. ` +
      'The `--workers 2` rows and the Redis `--io-threads 2` rows run unpinned (both cores, the load generator included); ' +
      `stretch (rostore --workers 2 ÷ Redis --io-threads 2): GET ${fmtRatio(summarize(rows.w2get.rps).median, summarize(rows.r2get.rps).median)}, ` +
      `GET -P ${PIPELINE} ${fmtRatio(summarize(rows.w2pipe.rps).median, summarize(rows.r2pipe.rps).median)}, ` +
      `MGET keys/s ${fmtRatio(summarize(rows.w2mget.keysPerSec).median, summarize(rows.r2mget.keysPerSec).median)}. ` +
      pacedToolNote(pacedTool),
    ...notes,
    ...(fw ? ['', fw.markdown] : []),
  ]
  return { markdown: lines.join('\n'), goals: respGoals(name, rows) }
}

function respGoals(name: string, rows?: Record<'get' | 'rget' | 'pipe' | 'rpipe' | 'mget' | 'rmget' | 'half', Row>): GoalRow[] {
  const med = (r: Row | undefined, pick: (r: Row) => number[]): number => (r ? summarize(pick(r)).median : NaN)
  const pair = (
    id: string,
    text: string,
    target: string,
    a: number,
    b: number,
    unit: string,
    ok: (x: number) => boolean,
    better: 'higher' | 'lower' = 'higher',
  ): GoalRow => {
    const have = Number.isFinite(a) && Number.isFinite(b)
    const x = a / b
    return goal(
      id,
      `${text}, ${name}`,
      target,
      have ? `${fmt(x, 2)}× (${fmt(a, better === 'lower' ? 1 : 0)} vs ${fmt(b, better === 'lower' ? 1 : 0)} ${unit})` : 'not run',
      have ? ok(x) : undefined,
    )
  }
  const p99 = med(rows?.half, (r) => r.p99)
  return [
    pair(
      'resp-get',
      'RESP GET requests/s vs Redis, 50 connections, no pipelining',
      '≥ 1.0×',
      med(rows?.get, (r) => r.rps),
      med(rows?.rget, (r) => r.rps),
      'req/s',
      (x) => x >= 1,
    ),
    pair(
      'resp-get-cpu',
      'RESP GET server CPU per request vs Redis',
      '≤ 1.25×',
      med(rows?.get, (r) => r.usPerReq),
      med(rows?.rget, (r) => r.usPerReq),
      'µs',
      (x) => x <= 1.25,
      'lower',
    ),
    pair(
      'resp-pipeline',
      `RESP GET -P ${PIPELINE} requests/s vs Redis`,
      '≥ 0.8×',
      med(rows?.pipe, (r) => r.rps),
      med(rows?.rpipe, (r) => r.rps),
      'req/s',
      (x) => x >= 0.8,
    ),
    pair(
      'resp-mget',
      `RESP MGET of ${BATCH} keys, keys/s vs Redis`,
      '≥ 1.0×',
      med(rows?.mget, (r) => r.keysPerSec),
      med(rows?.rmget, (r) => r.keysPerSec),
      'keys/s',
      (x) => x >= 1,
    ),
    goal(
      'resp-p99',
      `RESP GET p99 at half of peak load, ${name}`,
      '< 1 ms',
      Number.isFinite(p99) ? `${fmt(p99, 3)} ms at ${fmt(med(rows?.half, (r) => r.rps))} req/s` : 'not run',
      Number.isFinite(p99) ? p99 < 1 : undefined,
    ),
  ]
}
