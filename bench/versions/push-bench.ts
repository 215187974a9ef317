/**
 * Push benchmark: the time of a full `rostore push` of a ~1 GB build to 3 local nodes,
 * split into the fetch phase (every node pulls its files from nginx in parallel,
 * checksums them, the node verifies the copy) and the swap phase (all nodes flip).
 *
 *   node dist/bench/versions/push-bench.js [--gb 1] [--quick] [--runs 3] [--dir /tmp]
 *                                 [--reads-records 10M] [--skip-reads | --only-reads]
 *
 * Real `rostore serve` child processes and a real nginx on loopback. Markdown on stdout,
 * progress on stderr. --quick pushes ~100 MB.
 *
 * Then (push-reads.ts) reads during a push: the largest gap between answers and the p99
 * of reads on a node while it fetches and installs a 10M-record version (1M with
 * --quick), against the same reads without a push.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildStore } from '../../builder/engines/local/build-job'
import { loadCluster } from '../../cluster/cluster'
import { pushStore, type PushResult } from '../../client/push/push-store'
import { Nginx } from '../../testkit/peers/nginx'
import { startCluster } from '../../testkit/cluster/node-process'
import { parseCount, writeSyntheticTsv } from '../kit/data'
import { runPushReads } from './push-reads'

const TOKEN = 'push-bench-token-0123456789'
const log = (m: string): void => void process.stderr.write(`${m}\n`)

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick')
  if (!process.argv.includes('--only-reads')) await fullPush(quick)
  if (!process.argv.includes('--skip-reads')) {
    const records = arg('--reads-records')
    const r = await runPushReads({ quick, ...(records === undefined ? {} : { records: parseCount(records) }) })
    process.stdout.write(`\n${r.markdown}`)
  }
}

async function fullPush(quick: boolean): Promise<void> {
  const gb = Number(arg('--gb') ?? (quick ? 0.1 : 1))
  const runs = Number(arg('--runs') ?? (quick ? 1 : 3))
  const valueBytes = 1000
  const records = Math.round((gb * 1e9) / (valueBytes + 30))
  const dir = await mkdtemp(join(arg('--dir') ?? tmpdir(), 'rostore-push-bench-'))
  const nodes = await startCluster({ dir, nodes: 3, partitionsPerNode: 4, token: TOKEN, keepVersions: 1 })
  let nginx: Nginx | undefined
  try {
    const cluster = await loadCluster(nodes.clusterFile)
    const input = join(dir, 'input.tsv')
    log(`push-bench: writing ${records} records of ${valueBytes} B`)
    await writeSyntheticTsv(input, records, valueBytes)
    const www = join(dir, 'www')
    const results: PushResult[] = []
    let buildBytes = 0
    for (let v = 1; v <= runs; v++) {
      const b = await buildStore({
        inputs: [input],
        format: 'tsv',
        cluster,
        store: 'bench',
        output: join(www, `v${v}`),
        version: v,
        replication: 1,
      })
      buildBytes = b.nodes.reduce((s, n) => s + n.bytes, 0)
      log(`push-bench: built v${v}: ${(buildBytes / 1e9).toFixed(2)} GB in ${b.seconds.toFixed(1)} s`)
    }
    nginx = await Nginx.launch({ root: www })
    for (let v = 1; v <= runs; v++) {
      const r = await pushStore({ cluster, store: 'bench', from: `${nginx.url}/v${v}`, adminToken: TOKEN })
      if (r.status !== 'live') throw new Error(`push v${v}: ${r.status} ${JSON.stringify(r.nodes)}`)
      log(`push-bench: v${v} fetch ${r.fetchSeconds.toFixed(2)} s, swap ${(r.swapSeconds * 1000).toFixed(1)} ms`)
      results.push(r)
    }
    const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    const fetchS = med(results.map((r) => r.fetchSeconds))
    const swapMs = med(results.map((r) => r.swapSeconds * 1000))
    const rows = results.map(
      (r, i) =>
        `| ${i + 1} | ${(buildBytes / 1e9).toFixed(2)} | ${r.fetchSeconds.toFixed(2)} | ${(buildBytes / 1e6 / r.fetchSeconds).toFixed(0)} | ${(r.swapSeconds * 1000).toFixed(1)} |`,
    )
    process.stdout.write(
      [
        `Full push of a ${(buildBytes / 1e9).toFixed(2)} GB build (${records.toLocaleString('en-US')} records × ${valueBytes} B, replication 1) to 3 local nodes from nginx; ${runs} run(s), each a new version (fetch = all nodes fetched, checksummed and verified; swap = all nodes flipped).`,
        '',
        '| run | GB | fetch s | aggregate MB/s | swap ms (all nodes) |',
        '|---:|---:|---:|---:|---:|',
        ...rows,
        `| **median** | | **${fetchS.toFixed(2)}** | **${(buildBytes / 1e6 / fetchS).toFixed(0)}** | **${swapMs.toFixed(1)}** |`,
        '',
      ].join('\n'),
    )
  } finally {
    await nginx?.dispose()
    await nodes.killAll()
    await rm(dir, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`push-bench: ${err instanceof Error ? err.stack : String(err)}\n`)
  process.exit(1)
})
