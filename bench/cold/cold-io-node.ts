/**
 * A node's cold GETs under each warm-up path (ROSTORE_COLD_IO=pool|uring, docs/SERVING.md
 * "Stores larger than memory"): one store, the node restarted with its files evicted before
 * each run, redis-benchmark GETs of random keys from 64 connections. Short (a few seconds a
 * run): a comparison of the two paths, not section 4g.
 *
 *   node dist/bench/cold/cold-io-node.js --dir <a node directory> --records N [--requests R] [--rounds K] [--io pool,uring]
 */
import { execFileSync } from 'node:child_process'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { writeClusterFile, NodeProcess } from '../../testkit/cluster/node-process'
import { evictTree } from '../../testkit/stores/page-cache'
import { ensureDir, workRoot } from '../kit/data'
import { redisBenchmark } from '../peers/redis'
import { STORE } from '../kit/rostore'
import { treeCpuSeconds } from '../kit/system'

const TOKEN = 'cold-io-bench-admin-token-0123456789'

function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(name)
  const v = i >= 0 ? process.argv[i + 1] : fallback
  if (v === undefined) throw new Error(`${name} is required`)
  return v
}

async function main(): Promise<void> {
  const dir = arg('--dir')
  const records = Number(arg('--records'))
  const requests = Number(arg('--requests', '40000'))
  const rounds = Number(arg('--rounds', '2'))
  const paths = arg('--io', 'pool,uring').split(',')
  const root = ensureDir(join(workRoot(), 'cold-io-node'))
  execFileSync('rm', ['-rf', join(root, 'data')])
  const { path } = await writeClusterFile(root, { nodes: 1 })
  const start = (io: string): Promise<NodeProcess> =>
    NodeProcess.start({
      clusterFile: path,
      nodeId: 0,
      dataDir: join(root, 'data'),
      token: TOKEN,
      port: 0,
      workers: 2,
      env: { ROSTORE_COLD_IO: io },
      extraArgs: ['--resp-port', '0', '--resp-default-store', STORE],
      readyTimeoutMs: 120_000,
    })
  let node = await start('pool')
  try {
    const r = await node.admin('POST', `/stores/${STORE}/install`, { path: dir, swap: true, link: true })
    if (r.status !== 202) throw new Error(`install: ${r.status} ${r.body.toString()}`)
    const job = await node.waitJob(String((JSON.parse(r.body.toString()) as { id: string }).id), 600_000)
    if (job['state'] !== 'succeeded') throw new Error(`install: ${JSON.stringify(job)}`)
    await node.sigterm()
    for (let round = 0; round < rounds; round++) {
      for (const io of paths) {
        evictTree(join(root, 'data'))
        node = await start(io)
        const load0 = loadavg()[0] as number
        const res = await redisBenchmark(
          { port: node.respPort as number, cpuSeconds: () => treeCpuSeconds(node.pid) },
          ['GET', '__rand_int__'],
          {
            requests,
            clients: 64,
            keyspace: records,
            timeoutMs: 300_000,
          },
        )
        const st = JSON.parse((await node.request('/status')).body.toString()) as {
          stores: { store: string; coldReads: { hitRatio: number | null; io: string } | null }[]
        }
        const cold = st.stores.find((s) => s.store === STORE)?.coldReads
        process.stdout.write(
          `${JSON.stringify({ io, reported: cold?.io, getsPerSec: Math.round(res.rps), nodeCpuUsPerGet: Math.round((res.cpuSecs / requests) * 1e6), p50Ms: res.p50Ms, p99Ms: res.p99Ms, hitRatio: cold?.hitRatio, load: [load0, loadavg()[0]] })}\n`,
        )
        await node.sigterm()
      }
    }
  } finally {
    if (node.running) await node.kill9()
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`)
  process.exit(1)
})
