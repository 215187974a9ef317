/**
 * Measurement 3 — serving over loopback: single gets and multi-gets of 100 keys against
 * `rostore serve`, and the same against Redis (no persistence) loaded with the same
 * records. "One core each": the server (rostore serve, a single Node event loop, or
 * redis-server, single-threaded) is pinned to core 0 with taskset, the load generator (wrk
 * for rostore — autocannon when wrk cannot be installed — redis-benchmark for Redis, both
 * C) to core 1. Both sides use 50 keep-alive connections without pipelining, and the same
 * key distribution: uniform over the N keys plus 10% absent keys. Single-get latency "at
 * half of peak load" comes from an open-loop paced load generator (paced-load.ts). Server CPU (from /proc) tells whether the server was
 * the bottleneck (≈ 1.0 = one core busy). Also: node RSS against the size of the store's
 * files, and Redis's memory for the same records. Section 3b (runRespServeBench): the RESP
 * port against Redis with redis-benchmark driving both (bench/serve/resp-bench.ts).
 */
import { existsSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { decodeValues, encodeKeys } from '../../formats/wire/multiget'
import { ABSENT_FRACTION, ensureDataset, keyOf, valueOf, type Dataset } from '../kit/data'
import type { LoadJob, LoadResult } from '../load/load-client'
import { runPacedLoad } from '../load/paced-load'
import type { BenchContext, GoalRow, Section } from '../kit/report'
import { runRespBench } from './resp-bench'
import { verifyResp } from './resp-rows'
import { serveGoals } from './serve-goals'
import { emptyRow, rowCells, SERVE_HEAD, type Row } from './serve-rows'
import { redisServing } from './serve-redis'
import { SameNodeReads } from './serve-same-node'
import { SERVER_CPU, ServeProcess, serveDataDir } from './serve-process'
import { artifactDir, STORE } from '../kit/rostore'
import { fmt, fmtRatio, mdTable, summarize } from '../kit/stats'
import { duBytes, freePort, log, memoryOf, runTimed } from '../kit/system'
import { ensureWrk, runWrk } from '../load/wrk'

const CONNECTIONS = 50
/** Connections of the paced run: enough for the in-flight requests at half the peak. */
const PACED_CONNECTIONS = 16
const BATCH = 100
const CLIENT_CPU = 1

function httpCall(port: number, method: string, path: string, body?: Buffer): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, headers: body ? { 'content-length': String(body.length) } : {} },
      (res) => {
        const parts: Buffer[] = []
        res.on('data', (c: Buffer) => parts.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }))
        res.on('error', reject)
      },
    )
    req.setTimeout(10_000, () => req.destroy(new Error('request timed out')))
    req.on('error', reject)
    req.end(body)
  })
}

/** Checks answers of the node before loading it: present, absent, multi-get framing. */
async function verifyNode(port: number, ds: Dataset): Promise<void> {
  const n = ds.shape.records
  const ids = [0, n - 1, Math.floor(n / 2), 12345 % n]
  for (const id of ids) {
    const r = await httpCall(port, 'GET', `/stores/${STORE}/keys/${keyOf(id)}`)
    if (r.status !== 200 || !r.body.equals(valueOf(id, ds.shape.valueBytes, ds.seed)))
      throw new Error(`GET ${keyOf(id)}: status ${r.status}, wrong or missing value`)
  }
  const miss = await httpCall(port, 'GET', `/stores/${STORE}/keys/${keyOf(n + 7)}`)
  if (miss.status !== 404) throw new Error(`GET of an absent key: status ${miss.status}`)
  const keys = [...ids, n + 1, n + 2].map(keyOf)
  const mg = await httpCall(port, 'POST', `/stores/${STORE}/multi-get`, encodeKeys(keys))
  if (mg.status !== 200) throw new Error(`multi-get: status ${mg.status}: ${mg.body.toString().slice(0, 200)}`)
  const values = decodeValues(mg.body, keys.length)
  ids.forEach((id, j) => {
    if (!values[j]?.equals(valueOf(id, ds.shape.valueBytes, ds.seed))) throw new Error(`multi-get: wrong value for ${keyOf(id)}`)
  })
  if (values[ids.length] !== undefined || values[ids.length + 1] !== undefined) throw new Error('multi-get: absent keys answered')
}

async function load(job: LoadJob): Promise<LoadResult & { clientCpu: number }> {
  const t = await runTimed(process.execPath, [join(__dirname, '..', 'load', 'load-client.js'), JSON.stringify(job)], {
    cpu: CLIENT_CPU,
    timeoutMs: (job.durationSec + 120) * 1000,
  })
  const r = JSON.parse(t.stdout.trim().split('\n').pop() ?? '{}') as LoadResult
  // CPU of the whole client process (key generation included) over its load phase.
  return { ...r, clientCpu: (t.userSecs + t.sysSecs) / r.secs }
}

interface RostoreServing {
  readonly get: Row
  readonly half: Row
  readonly multi: Row
  /** The fast-path node's RESP GET and client rows (the same process as its HTTP rows). */
  readonly same?: SameNodeReads
  /** Requests/s of the paced row: half the median peak of the GET row. */
  readonly pacedRate?: number
  readonly rss?: { rss: number; hwm: number; dataBytes: number; indexBytes: number }
  readonly error?: string
}

/**
 * `readPath` is the node's --http-read-path: 'fast' (the default) gets every row, the RESP
 * and client rows of the same process included; 'node' (node:http for every request, the
 * path before the fast one) the peak rows only.
 */
async function rostoreServing(
  ctx: BenchContext,
  ds: Dataset,
  duration: number,
  wrk: boolean,
  readPath: 'fast' | 'node',
): Promise<RostoreServing> {
  const tool = wrk ? 'wrk' : 'autocannon'
  const name = readPath === 'fast' ? 'rostore serve' : 'rostore serve, node:http'
  const get = emptyRow(`${name}: GET /keys/<key> (${tool})`)
  const half = emptyRow(`${name}: GET paced at half the peak rate (${PACED_CONNECTIONS} connections)`)
  const multi = emptyRow(`${name}: multi-get of ${BATCH} keys (${tool})`)
  const nodeDir = join(artifactDir(ds, 'rostore-served'), 'out', 'node-0')
  const { dataDir, cluster } = await serveDataDir(ds, 'serve')
  let node: ServeProcess | undefined
  let same: SameNodeReads | undefined
  let pacedRate: number | undefined
  try {
    const respPort = readPath === 'fast' ? await freePort() : undefined
    const respArgs = respPort === undefined ? [] : ['--resp-port', String(respPort), '--resp-default-store', STORE]
    node = await ServeProcess.start(dataDir, cluster, { extraArgs: ['--http-read-path', readPath, ...respArgs] })
    await verifyNode(node.port, ds)
    if (respPort !== undefined) {
      await verifyResp(respPort, ds)
      same = new SameNodeReads(node, respPort, ds, { quick: ctx.quick, duration, seed: ctx.seed })
    }
    const base = { port: node.port, store: STORE, records: ds.shape.records, seed: ctx.seed, batch: BATCH, connections: CONNECTIONS }
    await load({ ...base, mode: 'get', durationSec: 1 }) // warm-up
    const measure = async (row: Row, job: LoadJob): Promise<void> => {
      const c0 = node!.cpuSeconds()
      const t0 = performance.now()
      const r =
        job.overallRate !== undefined
          ? await runPacedLoad(
              {
                port: job.port,
                store: job.store,
                records: job.records,
                seed: job.seed,
                rate: job.overallRate,
                connections: PACED_CONNECTIONS,
                durationSec: job.durationSec,
              },
              CLIENT_CPU,
            )
          : wrk
            ? await runWrk({ ...job, cpu: CLIENT_CPU })
            : await load(job)
      const cpu = (node!.cpuSeconds() - c0) / ((performance.now() - t0) / 1000)
      if (r.otherStatus > 0 || r.errors > 0) throw new Error(`${row.label}: ${r.otherStatus} unexpected statuses, ${r.errors} errors`)
      row.rps.push(r.rps)
      row.keysPerSec.push(r.keysPerSec)
      row.p50.push(r.p50Ms)
      row.p99.push(r.p99Ms)
      row.cpu.push(cpu)
      row.clientCpu.push(r.clientCpu)
      log(
        `serve ${ds.shape.name} ${row.label}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50Ms.toFixed(3)} ms, p99 ${r.p99Ms.toFixed(3)} ms, server CPU ${cpu.toFixed(2)}, client CPU ${r.clientCpu.toFixed(2)}`,
      )
    }
    for (let i = 0; i < ctx.runs; i++) {
      await measure(get, { ...base, mode: 'get', durationSec: duration })
      await measure(multi, { ...base, mode: 'multiget', durationSec: duration })
      await same?.respGetRun()
    }
    for (let i = 0; i < (same ? ctx.runs : 0); i++) await same?.clientRuns()
    pacedRate = Math.max(1, Math.floor(summarize(get.rps).median / 2))
    for (let i = 0; i < (readPath === 'node' ? 0 : ctx.quick ? 1 : ctx.runs); i++)
      await measure(half, { ...base, mode: 'get', durationSec: duration, overallRate: pacedRate })
    const mem = memoryOf(node.pid)
    const files = ['0.data', '0.index'].map((f) => join(nodeDir, f))
    return {
      get,
      half,
      multi,
      same,
      pacedRate,
      rss: {
        ...mem,
        dataBytes: existsSync(files[0] as string) ? duBytes(files[0] as string) : NaN,
        indexBytes: existsSync(files[1] as string) ? duBytes(files[1] as string) : NaN,
      },
    }
  } catch (err) {
    const msg = (err as Error).message.split('\n').slice(0, 6).join(' / ').slice(0, 500)
    log(`serve ${ds.shape.name}: rostore failed: ${msg}`)
    return { get, half, multi, same, pacedRate, error: msg }
  } finally {
    await node?.stop()
  }
}

export async function runServeBench(ctx: BenchContext): Promise<Section> {
  const duration = ctx.quick ? 1.5 : 10
  const parts: string[] = [
    `Server pinned to core ${SERVER_CPU}, load generator to core ${CLIENT_CPU}; ${CONNECTIONS} keep-alive connections, no pipelining; ` +
      `uniform keys with 10% absent. ${ctx.runs} runs of ${duration} s per row (after a warm-up); medians, spread = ±half the range. ` +
      `Peak HTTP rows are driven by wrk (C; bench/load/wrk.ts), RESP GET rows by redis-benchmark (C, \`-c ${CONNECTIONS} -r ` +
      `${Math.round((1 / (1 - ABSENT_FRACTION)) * 100) / 100}N\`, same 12-digit keys). "rostore serve" rows, its RESP row and the client ` +
      `table come from ONE node process (\`--http-read-path fast\`, the default, with \`--resp-port\`); "node:http" rows from a second ` +
      `node with \`--http-read-path node\`. The paced rows send GETs evenly spaced at half the median peak of rostore's HTTP GET row, ` +
      `Redis's at that same rate over RESP: open loop, latency counted from each request's due time, like wrk2 (bench/tools/paced-load.c). ` +
      `Server CPU = server CPU-seconds per wall second (1.0 = its core saturated), client CPU likewise for the load generator (near 1.0: ` +
      `the generator was the limit); server µs/req = the server's CPU per request, whichever side was the limit. ` +
      `The client table: ${CONNECTIONS} concurrent \`await get(key)\` loops on one client in a Node child pinned to core ${CLIENT_CPU} ` +
      '(bench/load/client-gets.ts): `StoreClient` with its default transport, and ioredis `getBuffer` (GET answered as bytes, like ' +
      "StoreClient's) on the same node's RESP port, at its defaults (a write per command) and with `enableAutoPipelining`; " +
      "client µs/get = the child's CPU (process.cpuUsage) per get over the timed phase, server µs/get = the node's CPU over the child's run ÷ its gets.",
  ]
  const goals: GoalRow[] = []
  const wrkMissing = await ensureWrk()
  if (wrkMissing) parts.push(`wrk not available (${wrkMissing}): autocannon measures the peak rows too.`)
  for (const shape of ctx.shapes) {
    const ds = ensureDataset(shape, ctx.seed)
    log(`serve bench: ${shape.name}`)
    const ro = await rostoreServing(ctx, ds, duration, wrkMissing === undefined, 'fast')
    const old = await rostoreServing(ctx, ds, duration, wrkMissing === undefined, 'node')
    const rd = await redisServing(ctx, ds, duration, ro.pacedRate)
    const respGet = ro.same?.respGet ?? emptyRow('rostore serve, RESP: GET (redis-benchmark)')
    const rows = [
      rowCells(ro.get),
      rowCells(respGet, ro.same?.respSkip),
      rowCells(ro.half),
      rowCells(ro.multi),
      rowCells(old.get),
      rowCells(old.multi),
      rowCells(rd.get, rd.skip),
      rowCells(rd.half, rd.skip),
      rowCells(rd.mget, rd.skip),
    ]
    parts.push(`### ${shape.name}\n\n${mdTable(SERVE_HEAD, rows)}`)
    if (ro.same) parts.push(ro.same.clientTable())
    const roMulti = summarize(ro.multi.keysPerSec).median
    const rdMulti = summarize(rd.mget.keysPerSec).median
    const roGet = summarize(ro.get.rps).median
    const rdGet = summarize(rd.get.rps).median
    const ratios: string[] = []
    if (Number.isFinite(roGet) && Number.isFinite(rdGet)) ratios.push(`single get rostore ÷ Redis = ${fmtRatio(roGet, rdGet)}`)
    if (Number.isFinite(roMulti) && Number.isFinite(rdMulti))
      ratios.push(`multi-get keys/s rostore ÷ Redis MGET = ${fmtRatio(roMulti, rdMulti)}`)
    if (ratios.length) parts.push(`Ratios: ${ratios.join('; ')}.`)
    const mem: string[] = []
    if (ro.rss) {
      mem.push(
        `rostore serve RSS after the runs ${fmt(ro.rss.rss / 2 ** 20)} MiB (peak ${fmt(ro.rss.hwm / 2 ** 20)} MiB) with ${fmt(ro.rss.dataBytes / 2 ** 20)} MiB of .data ` +
          `and ${fmt(ro.rss.indexBytes / 2 ** 20)} MiB of .index (RSS ÷ .data = ${fmt(ro.rss.rss / ro.rss.dataBytes)}): in the default mmap mode RSS counts the mapped pages of .index and .data the node has touched, which are the shared page cache, not memory of the node's own (section 4b's memory table separates heap and RssAnon).`,
      )
    }
    if (rd.memory)
      mem.push(
        `Redis with the same records: RSS ${fmt(rd.memory.rss / 2 ** 20)} MiB (used_memory ${fmt(rd.memory.used / 2 ** 20)} MiB); loading it with redis-cli --pipe took ${fmt(rd.loadSecs ?? NaN)} s.`,
      )
    if (mem.length) parts.push(mem.join(' '))
    if (ro.error) parts.push(`rostore serving stopped early: ${ro.error}`)
    if (old.error) parts.push(`rostore serving (node:http) stopped early: ${old.error}`)
    goals.push(
      ...serveGoals(shape.name, {
        get: ro.get,
        half: ro.half,
        multi: ro.multi,
        respGet,
        redisMget: rd.mget,
        redisHalf: rd.half,
        redisSkip: rd.skip,
      }),
    )
  }
  return { title: '3. Serving over loopback', markdown: parts.join('\n\n') + '\n', goals }
}

/** 3b: the RESP port against redis-server, redis-benchmark driving both; forwarding measured on the first shape. */
export async function runRespServeBench(ctx: BenchContext): Promise<Section> {
  const duration = ctx.quick ? 1.5 : 10
  const parts: string[] = [
    `Server pinned to core ${SERVER_CPU}, redis-benchmark to core ${CLIENT_CPU}; ${ctx.runs} runs of about ${duration} s per row, rostore and Redis ` +
      'interleaved; medians, spread = ±half the range. "server µs/req" = server CPU time ÷ requests: on 2 cores the unpipelined GET rate is ' +
      "bound by redis-benchmark's own core, so this column compares the servers' work. Same 12-digit keys (10% absent) on both.",
  ]
  const goals: GoalRow[] = []
  for (const shape of ctx.shapes) {
    const ds = ensureDataset(shape, ctx.seed)
    log(`resp bench: ${shape.name}`)
    const r = await runRespBench(ctx, ds, duration, shape === ctx.shapes[0])
    parts.push(r.markdown)
    goals.push(...r.goals)
  }
  return { title: '3b. Serving over RESP (the Redis protocol)', markdown: parts.join('\n\n') + '\n', goals }
}
