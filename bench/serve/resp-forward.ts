/**
 * Section 3b, the cost of a forwarded key: a 2-node cluster where node 0 owns 1 partition
 * of 64 and node 1 the rest (replication 1), both pinned to the server core; the same
 * redis-benchmark load goes to node 1 (keys local) and to node 0 (keys forwarded to node 1),
 * and the server CPU of both nodes per request is compared.
 */
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from '../../common/net'
import { ABSENT_FRACTION, datasetId, ensureDir, workRoot, type Dataset } from '../kit/data'
import { redisBenchmark, type RedisBenchResult, type RespTarget } from '../peers/redis'
import type { BenchContext } from '../kit/report'
import { BATCH, CLIENT_CPU, CONNECTIONS, HEAD, cells, push, row, target, verifyResp, type Row } from './resp-rows'
import { rostoreBuild, STORE } from '../kit/rostore'
import { linkVersion, ServeProcess } from './serve-process'
import { fmt, fmtRatio, mdTable, summarize } from '../kit/stats'
import { log } from '../kit/system'

/**
 * The cost of a forwarded key: a 2-node cluster where node 0 owns 1 partition of 64
 * (about 1.6% of the keys) and node 1 the rest, both nodes pinned to the server core. The
 * same load goes to node 1 (keys local) and to node 0 (keys forwarded to node 1); the
 * server CPU of both nodes per request is compared.
 */
export async function forwardCost(ctx: BenchContext, ds: Dataset, duration: number): Promise<{ markdown: string }> {
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
