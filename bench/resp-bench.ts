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
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { RespClientConnection } from '../client/resp-connection'
import { freePort } from '../common/net'
import { ABSENT_FRACTION, datasetId, ensureDir, keyOf, valueOf, workRoot, type Dataset } from './data'
import type { LoadResult } from './load-client'
import type { PacedJob } from './paced-client'
import { ensureRedis, ensureRespInput, redisBenchmark, RedisServer, type RedisBenchResult, type RespTarget } from './peers/redis'
import { goal, type BenchContext, type GoalRow } from './report'
import { rostoreBuild, STORE } from './rostore'
import { linkVersion, serveDataDir, ServeProcess } from './serve-bench'
import { fmt, fmtRatio, fmtSpread, mdTable, summarize } from './stats'
import { cpuSecondsOf, log, pinArgs, runTimed } from './system'

const CONNECTIONS = 50
const PIPELINE = 16
const BATCH = 100
const PACED_CONNECTIONS = 16
const CLIENT_CPU = 1

interface Row {
  readonly label: string
  readonly rps: number[]
  readonly keysPerSec: number[]
  readonly p50: number[]
  readonly p99: number[]
  readonly cpu: number[]
  /** Server CPU µs per request (per key for the forwarding rows). */
  readonly usPerReq: number[]
  readonly clientCpu: number[]
}

const row = (label: string): Row => ({ label, rps: [], keysPerSec: [], p50: [], p99: [], cpu: [], usPerReq: [], clientCpu: [] })

function push(r: Row, b: RedisBenchResult, keysPerRequest: number): void {
  r.rps.push(b.rps)
  r.keysPerSec.push(b.rps * keysPerRequest)
  r.p50.push(b.p50Ms)
  r.p99.push(b.p99Ms)
  r.cpu.push(b.serverCpu)
  r.usPerReq.push((b.cpuSecs / b.requests) * 1e6)
  r.clientCpu.push(b.clientCpu)
  log(
    `resp ${r.label}: ${b.rps.toFixed(0)} req/s, p50 ${b.p50Ms} ms, p99 ${b.p99Ms} ms, server ${((b.cpuSecs / b.requests) * 1e6).toFixed(1)} µs/req, client CPU ${b.clientCpu.toFixed(2)}`,
  )
}

function cells(r: Row): string[] {
  if (r.rps.length === 0) return [r.label, 'not run', '', '', '', '', '', '', '']
  const rps = summarize(r.rps)
  const m = (xs: number[], d = 1): string => fmt(summarize(xs).median, d)
  return [
    r.label,
    fmt(rps.median),
    fmtSpread(rps),
    fmt(summarize(r.keysPerSec).median),
    m(r.p50, 3),
    m(r.p99, 3),
    m(r.cpu, 2),
    m(r.usPerReq),
    m(r.clientCpu, 2),
  ]
}

const HEAD = ['system / request', 'requests/s', 'spread', 'keys/s', 'p50 ms', 'p99 ms', 'server CPU', 'server µs/req', 'client CPU']

/** A rostore node process as a redis-benchmark target (CPU of one or more node processes). */
function target(port: number, procs: readonly ServeProcess[]): RespTarget {
  return { port, cpuSeconds: () => procs.reduce((n, p) => n + p.cpuSeconds(), 0) }
}

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

/** Checks the RESP answers of a node before loading it: present and absent keys, MGET. */
async function verifyResp(port: number, ds: Dataset): Promise<void> {
  const c = new RespClientConnection({ host: '127.0.0.1', port, timeoutMs: 10_000 })
  try {
    const n = ds.shape.records
    const ids = [0, n - 1, Math.floor(n / 2)]
    for (const id of ids) {
      const v = await c.command(['GET', keyOf(id)])
      if (!Buffer.isBuffer(v) || !v.equals(valueOf(id, ds.shape.valueBytes, ds.seed)))
        throw new Error(`RESP GET ${keyOf(id)}: wrong or missing value`)
    }
    if ((await c.command(['GET', keyOf(n + 3)])) !== null) throw new Error('RESP GET of an absent key answered a value')
    const many = await c.command(['MGET', ...ids.map(keyOf), keyOf(n + 4)])
    if (
      !Array.isArray(many) ||
      many.length !== 4 ||
      many[3] !== null ||
      !ids.every((id, j) => Buffer.isBuffer(many[j]) && (many[j] as Buffer).equals(valueOf(id, ds.shape.valueBytes, ds.seed)))
    )
      throw new Error('RESP MGET: wrong answer')
  } finally {
    c.close()
  }
}

async function paced(job: PacedJob): Promise<LoadResult> {
  const t = await runTimed(process.execPath, [join(__dirname, 'paced-client.js'), JSON.stringify(job)], {
    cpu: CLIENT_CPU,
    timeoutMs: (job.durationSec + 120) * 1000,
  })
  return JSON.parse(t.stdout.trim().split('\n').pop() ?? '{}') as LoadResult
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
  }
  const { dataDir, cluster } = await serveDataDir(ds, 'serve-resp')
  const respPort = await freePort()
  let node: ServeProcess | undefined
  let redis: RedisServer | undefined
  let memory: (RespTarget & { stop(): void }) | undefined
  const notes: string[] = []
  try {
    node = await ServeProcess.start(dataDir, cluster, { extraArgs: ['--resp-port', String(respPort), '--resp-default-store', STORE] })
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
      const res = await paced({
        port,
        store: STORE,
        records: ds.shape.records,
        seed: ctx.seed,
        rate,
        connections: PACED_CONNECTIONS,
        durationSec: duration,
        protocol: 'resp',
      })
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
  } catch (err) {
    notes.push(`RESP rows stopped early: ${(err as Error).message.split('\n').slice(0, 4).join(' / ').slice(0, 400)}`)
    log(`resp ${name}: ${notes[notes.length - 1]}`)
  } finally {
    await node?.stop()
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
      'The stretch row (rostore `--workers 2` against Redis `io-threads 2`) needs the multi-process node and is not measured here.',
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

/**
 * The cost of a forwarded key: a 2-node cluster where node 0 owns 1 partition of 64
 * (about 1.6% of the keys) and node 1 the rest, both nodes pinned to the server core. The
 * same load goes to node 1 (keys local) and to node 0 (keys forwarded to node 1); the
 * server CPU of both nodes per request is compared.
 */
async function forwardCost(ctx: BenchContext, ds: Dataset, duration: number): Promise<{ markdown: string }> {
  const local = row('GET, client on the node holding the keys (local)')
  const fwd = row('GET, client on the other node (forwarded)')
  const mlocal = row(`MGET of ${BATCH}, local`)
  const mfwd = row(`MGET of ${BATCH}, forwarded`)
  const nodes: ServeProcess[] = []
  let note = ''
  try {
    const layout = [
      { id: 0, partitions: [0] },
      { id: 1, partitions: Array.from({ length: 63 }, (_, i) => i + 1) },
    ]
    const art = join(workRoot(), 'stores', datasetId(ds.shape, ds.seed), 'rostore-2node')
    if (!existsSync(join(art, '.done'))) {
      log(`preparing the 2-node rostore build for ${ds.shape.name}`)
      rmSync(art, { recursive: true, force: true })
      mkdirSync(`${art}.tmp`, { recursive: true })
      const buildCluster = join(`${art}.tmp`, 'cluster.json')
      writeFileSync(
        buildCluster,
        JSON.stringify({ name: 'bench', nodes: layout.map((n) => ({ ...n, host: '127.0.0.1', port: 7000 + n.id })) }),
      )
      await rostoreBuild(ds, join(`${art}.tmp`, 'out'), { chunks: 1, cluster: buildCluster })
      writeFileSync(join(`${art}.tmp`, '.done'), new Date().toISOString())
      renameSync(`${art}.tmp`, art)
    }
    const root = ensureDir(join(workRoot(), 'serve-forward'))
    const ports = await Promise.all(layout.map(async () => ({ port: await freePort(), respPort: await freePort() })))
    const cluster = join(root, 'cluster.json')
    writeFileSync(cluster, JSON.stringify({ name: 'bench', nodes: layout.map((n, i) => ({ ...n, host: '127.0.0.1', ...ports[i] })) }))
    for (const n of layout) {
      const dataDir = linkVersion(join(art, 'out', `node-${n.id}`), join(root, `data-${n.id}`))
      nodes.push(await ServeProcess.start(dataDir, cluster, { nodeId: n.id, extraArgs: ['--resp-default-store', STORE] }))
    }
    for (const n of layout) await verifyResp(ports[n.id]!.respPort, ds)
    const both = (port: number): RespTarget => target(port, nodes)
    const keyspace = Math.round(ds.shape.records / (1 - ABSENT_FRACTION))
    const bench = (port: number, cmd: readonly string[], requests: number): Promise<RedisBenchResult> =>
      redisBenchmark(both(port), cmd, {
        requests,
        clients: CONNECTIONS,
        keyspace,
        cpu: CLIENT_CPU,
        timeoutMs: (duration * 10 + 120) * 1000,
      })
    const getCmd = ['GET', '__rand_int__']
    const mgetCmd = ['MGET', ...Array.from({ length: BATCH }, () => '__rand_int__')]
    await bench(ports[0]!.respPort, getCmd, 2_000)
    const nGet = Math.max(5_000, Math.round((await bench(ports[0]!.respPort, getCmd, 5_000)).rps * duration))
    const nMget = Math.max(300, Math.round((await bench(ports[0]!.respPort, mgetCmd, 300)).rps * duration))
    for (let i = 0; i < ctx.runs; i++) {
      push(local, await bench(ports[1]!.respPort, getCmd, nGet), 1)
      push(fwd, await bench(ports[0]!.respPort, getCmd, nGet), 1)
      push(mlocal, await bench(ports[1]!.respPort, mgetCmd, nMget), BATCH)
      push(mfwd, await bench(ports[0]!.respPort, mgetCmd, nMget), BATCH)
    }
  } catch (err) {
    note = `Forwarding rows stopped early: ${(err as Error).message.split('\n').slice(0, 4).join(' / ').slice(0, 400)}`
    log(note)
  } finally {
    for (const n of nodes) await n.stop()
  }
  const us = (r: Row): number => summarize(r.usPerReq).median
  const text = [
    `#### Cost of a forwarded key (${ds.shape.name})`,
    '',
    'Two nodes pinned to the server core: node 0 owns 1 partition of 64, node 1 the rest; replication 1. "server µs/req" is the CPU of both node processes per request.',
    '',
    mdTable(HEAD, [local, fwd, mlocal, mfwd].map(cells)),
    '',
    `Forwarded ÷ local server CPU per request: GET ${fmt(us(fwd) / us(local), 2)}×, MGET of ${BATCH} ${fmt(us(mfwd) / us(mlocal), 2)}× ` +
      `(throughput ${fmtRatio(summarize(fwd.rps).median, summarize(local.rps).median)} and ${fmtRatio(summarize(mfwd.keysPerSec).median, summarize(mlocal.keysPerSec).median)}).`,
    ...(note ? [note] : []),
  ]
  return { markdown: text.join('\n') }
}
