/**
 * Diagnostic for section 3b, run on its own:
 *   node dist/bench/serve/resp-side-by-side.js [100|1k] [runs]
 *
 * Server CPU per unpipelined GET of rostore and of Redis measured at the same time: the
 * node (one serving worker, pinned with its supervisor) and redis-server both on core 0,
 * each under its own redis-benchmark (25 connections) on core 1, the same 1M-record data
 * set as section 3b. Back-to-back runs on this shared VM drift by more than the difference
 * between the servers (the same server measures 15-20 µs per GET from one minute to the
 * next); side by side both see the same machine, so their ratio holds still. Not a product
 * setup: each server gets about half of what one load generator can send.
 */
import { join } from 'node:path'
import { ABSENT_FRACTION, ensureDataset, ensureDir, shapes, workRoot } from '../kit/data'
import { ensureRespInput, RedisServer, redisBenchmark, type RespTarget } from '../peers/redis'
import { BATCH, CLIENT_CPU } from './resp-rows'
import { STORE } from '../kit/rostore'
import { ServeProcess, serveDataDir } from './serve-process'
import { freePort, log } from '../kit/system'

const REQUESTS = 200_000
/** Half of section 3b's 50: one load generator's core is shared by two. */
const CLIENTS = 25

async function main(): Promise<void> {
  const [size, runsArg] = process.argv.slice(2)
  const shape = shapes(1_000_000)[size === '1k' ? 1 : 0]!
  const runs = Number(runsArg ?? 6)
  const ds = ensureDataset(shape)
  const { dataDir, cluster } = await serveDataDir(ds, 'serve-resp')
  const respPort = await freePort()
  const node = await ServeProcess.start(dataDir, cluster, {
    workers: 1,
    extraArgs: ['--resp-port', String(respPort), '--resp-default-store', STORE],
  })
  const redis = await RedisServer.start(ensureDir(join(workRoot(), 'serve-resp', 'redis')), 0)
  try {
    await redis.load(ensureRespInput(ds))
    const ro: RespTarget = { port: respPort, cpuSeconds: () => node.cpuSeconds() }
    const keyspace = Math.round(ds.shape.records / (1 - ABSENT_FRACTION))
    const run = (t: RespTarget, requests: number, cmd: readonly string[]): ReturnType<typeof redisBenchmark> =>
      redisBenchmark(t, cmd, { requests, clients: CLIENTS, keyspace, cpu: CLIENT_CPU, timeoutMs: 600_000 })
    // Every key once, in MGETs, on both (a node maps its data pages as reads first touch them).
    const mget = ['MGET', ...Array.from({ length: BATCH }, () => '__rand_int__')]
    const warm = Math.ceil(ds.shape.records / BATCH)
    await Promise.all([run(ro, warm, mget), run(redis, warm, mget)])
    const get = ['GET', '__rand_int__']
    let sumRo = 0
    let sumRedis = 0
    for (let i = 0; i < runs; i++) {
      const [a, b] = await Promise.all([run(ro, REQUESTS, get), run(redis, REQUESTS, get)])
      const usRo = (a.cpuSecs / a.requests) * 1e6
      const usRedis = (b.cpuSecs / b.requests) * 1e6
      sumRo += usRo
      sumRedis += usRedis
      log(
        `${shape.name} run ${i + 1}: rostore ${usRo.toFixed(1)} µs/GET at ${a.rps.toFixed(0)}/s, ` +
          `Redis ${usRedis.toFixed(1)} µs/GET at ${b.rps.toFixed(0)}/s, ratio ${(usRo / usRedis).toFixed(2)}`,
      )
    }
    log(
      `${shape.name}, ${runs} runs: rostore ${(sumRo / runs).toFixed(1)} µs/GET, Redis ${(sumRedis / runs).toFixed(1)}, ratio ${(sumRo / sumRedis).toFixed(2)}`,
    )
  } finally {
    await node.stop()
    redis.stop()
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
