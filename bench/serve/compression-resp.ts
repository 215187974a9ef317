/**
 * The RESP rows of 2c: a node (`rostore serve`, one worker, pinned to the server core)
 * per store, the uncompressed and the zstd + dictionary build of the realistic values,
 * both under redis-benchmark GET (50 connections, uniform keys of the store, all present)
 * pinned to the other core; server CPU µs per request as section 3b computes it.
 * Runs are interleaved (none, zstd, none, ...) so drift in the machine's load hits both.
 */
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { RespClientConnection } from '../../client/resp-connection'
import { freePort } from '../../common/net'
import { stageNodeDir } from '../../swapper/disk/install'
import { ensureDir, keyOf, workRoot } from '../kit/data'
import { goal, type BenchContext } from '../kit/report'
import { benchCluster, STORE } from '../kit/rostore'
import { fmt, mdTable, summarize } from '../kit/stats'
import type { CompressionExtra, KeptStore } from '../lookup/compression-bench'
import { ensureRedis, redisBenchmark, type RespTarget } from '../peers/redis'
import { BATCH, CLIENT_CPU, CONNECTIONS, HEAD, cells, push, row, type Row } from './resp-rows'
import { ServeProcess } from './serve-process'

/** The first records must answer their values before loading (the generator is sequential). */
async function verify(port: number, s: KeptStore): Promise<void> {
  const c = new RespClientConnection({ host: '127.0.0.1', port, timeoutMs: 10_000 })
  try {
    for (const id of [0, 1, Math.min(999, s.records - 1)]) {
      const v = await c.command(['GET', keyOf(id)])
      if (!Buffer.isBuffer(v) || !v.equals(s.value(id))) throw new Error(`RESP GET ${keyOf(id)} (${s.label}): wrong or missing value`)
    }
  } finally {
    c.close()
  }
}

export const compressionRespRows: CompressionExtra = async (ctx: BenchContext, stores) => {
  const na = (why: string) => ({
    markdown: `RESP GET rows not run: ${why}.`,
    goals: [goal('zstd-resp-cpu', 'RESP GET server CPU, zstd + dictionary', '≤ 1.3× uncompressed', 'not run', undefined)],
  })
  const missing = await ensureRedis()
  if (missing) return na(missing)
  const root = ensureDir(join(workRoot(), 'compression-resp'))
  const cluster = benchCluster(root)
  const nodes: { store: KeptStore; node: ServeProcess; port: number; row: Row }[] = []
  try {
    for (const s of [stores.none, stores.zstdDict]) {
      const port = await freePort()
      const dataDir = join(root, `data-${s.id}`)
      rmSync(dataDir, { recursive: true, force: true })
      ensureDir(join(dataDir, STORE))
      // A format-2 build is staged as a node's install does it (its node view written, files linked).
      await stageNodeDir(s.dir, join(dataDir, STORE, 'version-1'), { link: true }, 0)
      writeFileSync(join(dataDir, STORE, 'LIVE'), '1\n')
      const node = await ServeProcess.start(dataDir, cluster, {
        workers: 1,
        extraArgs: ['--resp-port', String(port), '--resp-default-store', STORE],
      })
      nodes.push({ store: s, node, port, row: row(`rostore RESP (${s.label}): GET, ${CONNECTIONS} connections`) })
      await verify(port, s)
    }
    const records = stores.none.records
    const target = (n: (typeof nodes)[number]): RespTarget => ({ port: n.port, cpuSeconds: () => n.node.cpuSeconds() })
    const bench = (n: (typeof nodes)[number], cmd: readonly string[], requests: number) =>
      redisBenchmark(target(n), cmd, { requests, clients: CONNECTIONS, keyspace: records, cpu: CLIENT_CPU, timeoutMs: 600_000 })
    // Every key once in MGETs first: a node maps its files page by page as reads first
    // touch them, and the rows are to measure the steady state, not that warm-up.
    const mget = ['MGET', ...Array.from({ length: BATCH }, () => '__rand_int__')]
    for (const n of nodes) await bench(n, mget, Math.ceil(records / BATCH))
    const requests = ctx.quick ? 20_000 : 100_000
    for (let i = 0; i < ctx.runs; i++) for (const n of nodes) push(n.row, await bench(n, ['GET', '__rand_int__'], requests), 1)
  } catch (err) {
    return na(`stopped early: ${(err as Error).message.split('\n').slice(0, 3).join(' / ').slice(0, 300)}`)
  } finally {
    for (const n of nodes) await n.node.stop()
    // The data directories hold links to the kept builds, which the section deletes.
    for (const s of [stores.none, stores.zstdDict]) rmSync(join(root, `data-${s.id}`), { recursive: true, force: true })
  }
  const us = (i: number): number => summarize((nodes[i] as (typeof nodes)[number]).row.usPerReq).median
  const x = us(1) / us(0)
  return {
    markdown: [
      `#### RESP GET, ${CONNECTIONS} connections (realistic values)`,
      '',
      mdTable(
        HEAD,
        nodes.map((n) => cells(n.row)),
      ),
      '',
      `A node per store (\`rostore serve --workers 1 --resp-port P --resp-default-store ${STORE}\`, pinned to core 0), redis-benchmark GET of uniform keys of the store (all present) pinned to core 1, every key read once by MGETs first; median of ${ctx.runs} interleaved run(s). zstd + dictionary ÷ uncompressed, server µs per GET: ${x.toFixed(2)}×.`,
    ].join('\n'),
    goals: [
      goal(
        'zstd-resp-cpu',
        'RESP GET server CPU, zstd + dictionary',
        '≤ 1.3× uncompressed',
        `${x.toFixed(2)}× (${fmt(us(1), 1)} vs ${fmt(us(0), 1)} µs per GET)`,
        x <= 1.3,
      ),
    ],
  }
}
