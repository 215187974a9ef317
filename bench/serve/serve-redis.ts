/**
 * Section 3's Redis rows: redis-server (no persistence) loaded with the same records,
 * pinned like the node, GET and MGET from redis-benchmark and GET paced at rostore's rate.
 */
import { join } from 'node:path'
import { ABSENT_FRACTION, ensureDir, workRoot, type Dataset } from '../kit/data'
import type { BenchContext } from '../kit/report'
import { STORE } from '../kit/rostore'
import { log } from '../kit/system'
import { runPacedLoad } from '../load/paced-load'
import { ensureRedis, ensureRespInput, redisBenchmark, RedisServer, type RedisBenchResult } from '../peers/redis'
import { SERVER_CPU } from './serve-process'
import { emptyRow, type Row } from './serve-rows'

const CONNECTIONS = 50
/** As rostore's paced row: enough connections for the requests in flight at its rate. */
const PACED_CONNECTIONS = 16
const BATCH = 100
const CLIENT_CPU = 1

export interface RedisServing {
  readonly get: Row
  /** Paced at rostore's paced rate. */
  readonly half: Row
  readonly mget: Row
  readonly memory?: { rss: number; used: number }
  readonly loadSecs?: number
  readonly skip?: string
}

/** `pacedRate`: the rate of rostore's paced row, at which Redis is paced too (none: no paced row). */
export async function redisServing(ctx: BenchContext, ds: Dataset, duration: number, pacedRate: number | undefined): Promise<RedisServing> {
  const get = emptyRow('Redis: redis-benchmark GET')
  const half = emptyRow(`Redis: GET paced at rostore's paced rate (${PACED_CONNECTIONS} connections)`)
  const mget = emptyRow(`Redis: redis-benchmark MGET of ${BATCH} keys`)
  const missing = await ensureRedis()
  if (missing) return { get, half, mget, skip: missing }
  const dir = ensureDir(join(workRoot(), 'serve', 'redis'))
  const resp = ensureRespInput(ds)
  let server: RedisServer | undefined
  try {
    server = await RedisServer.start(dir, SERVER_CPU)
    const loaded = await server.load(resp)
    if (loaded.keys !== ds.shape.records) throw new Error(`Redis holds ${loaded.keys} keys after loading ${ds.shape.records}`)
    log(`serve ${ds.shape.name}: Redis loaded in ${loaded.secs.toFixed(1)} s`)
    const keyspace = Math.round(ds.shape.records / (1 - ABSENT_FRACTION))
    const getCmd = ['GET', '__rand_int__']
    const mgetCmd = ['MGET', ...Array.from({ length: BATCH }, () => '__rand_int__')]
    const bench = (cmd: readonly string[], requests: number): Promise<RedisBenchResult> =>
      redisBenchmark(server!, cmd, { requests, clients: CONNECTIONS, keyspace, cpu: CLIENT_CPU, timeoutMs: (duration * 5 + 120) * 1000 })
    // Calibrate the request count so one run lasts about `duration` seconds.
    const calGet = await bench(getCmd, ctx.quick ? 10_000 : 20_000)
    const calMget = await bench(mgetCmd, ctx.quick ? 500 : 1_000)
    const nGet = Math.max(10_000, Math.min(50_000_000, Math.round(calGet.rps * duration)))
    const nMget = Math.max(1_000, Math.min(5_000_000, Math.round(calMget.rps * duration)))
    const push = (row: Row, r: RedisBenchResult, batch: number): void => {
      row.rps.push(r.rps)
      row.keysPerSec.push(r.rps * batch)
      row.p50.push(r.p50Ms)
      row.p99.push(r.p99Ms)
      row.cpu.push(r.serverCpu)
      row.clientCpu.push(r.clientCpu)
      log(
        `serve ${ds.shape.name} ${row.label}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, server CPU ${r.serverCpu.toFixed(2)}, client CPU ${r.clientCpu.toFixed(2)}`,
      )
    }
    for (let i = 0; i < ctx.runs; i++) {
      push(get, await bench(getCmd, nGet), 1)
      push(mget, await bench(mgetCmd, nMget), BATCH)
    }
    for (let i = 0; pacedRate !== undefined && i < (ctx.quick ? 1 : ctx.runs); i++) {
      const c0 = server.cpuSeconds()
      const r = await runPacedLoad(
        {
          port: server.port,
          store: STORE,
          records: ds.shape.records,
          seed: ctx.seed,
          rate: pacedRate,
          connections: PACED_CONNECTIONS,
          durationSec: duration,
          protocol: 'resp',
        },
        CLIENT_CPU,
      )
      if (r.errors > 0 || r.otherStatus > 0) throw new Error(`${half.label}: ${r.errors} errors, ${r.otherStatus} error replies`)
      half.rps.push(r.rps)
      half.keysPerSec.push(r.rps)
      half.p50.push(r.p50Ms)
      half.p99.push(r.p99Ms)
      half.cpu.push((server.cpuSeconds() - c0) / r.secs)
      half.clientCpu.push(r.clientCpu)
      log(`serve ${ds.shape.name} ${half.label}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50Ms.toFixed(3)} ms, p99 ${r.p99Ms.toFixed(3)} ms`)
    }
    return { get, half, mget, memory: { rss: server.rssBytes(), used: await server.usedMemory() }, loadSecs: loaded.secs }
  } catch (err) {
    const msg = (err as Error).message.split('\n').slice(0, 6).join(' / ').slice(0, 500)
    log(`serve ${ds.shape.name}: Redis failed: ${msg}`)
    return { get: { ...get, error: msg }, half: { ...half, error: msg }, mget: { ...mget, error: msg } }
  } finally {
    server?.stop()
  }
}
