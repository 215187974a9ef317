/**
 * Object storage, same run, same files:
 *  - push of one build to 3 local nodes from the S3 test server (s3rver, SigV4 checked,
 *    the nodes signing with their own credentials) and from nginx serving the same files:
 *    fetch time, and the CPU the nodes spent per GB fetched (/proc: supervisor + workers);
 *  - build from Parquet parts (written by DuckDB) read from s3:// and from local disk.
 *
 *   node dist/bench/versions/object-storage-bench.js [--gb 1] [--records 1M] [--quick] [--runs 3]
 *
 * Markdown on stdout, progress on stderr. --quick: ~100 MB push, 200k records.
 */
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildStore } from '../../builder/engines/local/build-job'
import { loadCluster } from '../../cluster/cluster'
import { pushStore } from '../../client/push/push-store'
import { uploadFile } from '../../s3/upload'
import { duckdb, sqlString } from '../../testkit/stores/duckdb'
import { Nginx } from '../../testkit/peers/nginx'
import { startCluster, type NodeProcess } from '../../testkit/cluster/node-process'
import { S3TestServer } from '../../testkit/peers/s3-server'
import { parseCount } from '../kit/data'

const TOKEN = 'objstore-bench-token-0123456789'
const log = (m: string): void => void process.stderr.write(`objstore-bench: ${m}\n`)

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

const TICKS = 100 // USER_HZ on Linux

/** CPU seconds (user + system) of a node: its supervisor and its serving workers. */
function nodeCpuSeconds(node: NodeProcess): number {
  const pids = [node.child.pid!, ...node.workerPids().values()]
  let ticks = 0
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // A worker that exited: its time is gone with it.
    }
  }
  return ticks / TICKS
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick')
  const gb = Number(arg('--gb') ?? (quick ? 0.1 : 1))
  const runs = Number(arg('--runs') ?? (quick ? 1 : 3))
  const buildRecords = parseCount(arg('--records') ?? (quick ? '200k' : '1M'))
  const dir = await mkdtemp(join(tmpdir(), 'rostore-objstore-bench-'))
  const s3server = await S3TestServer.start({ buckets: ['data', 'builds'] })
  const restore = s3server.apply()
  const s3 = s3server.client()
  const nodes = await startCluster({ dir, nodes: 3, partitionsPerNode: 4, token: TOKEN, keepVersions: 1, env: s3server.env })
  let nginx: Nginx | undefined
  try {
    const cluster = await loadCluster(nodes.clusterFile)
    // Push: one build, 1000-byte values, uploaded to S3 and served by nginx from the same files.
    const valueBytes = 1000
    const records = Math.round((gb * 1e9) / (valueBytes + 30))
    const parts = join(dir, 'push-parts')
    await mkdir(parts)
    log(`writing ${records} records of ${valueBytes} B with DuckDB`)
    await duckdb(
      `COPY (SELECT i::VARCHAR AS key, md5(i::VARCHAR) || repeat('v', ${valueBytes - 32}) AS value FROM range(0, ${records}) t(i)) TO ${sqlString(join(parts, 'part-0.parquet'))} (FORMAT parquet)`,
    )
    const www = join(dir, 'www')
    let buildBytes = 0
    for (let v = 1; v <= 2 * runs; v++) {
      const b = await buildStore({ inputs: [parts], format: 'parquet', cluster, store: 'bench', output: join(www, `v${v}`), version: v })
      buildBytes = b.nodes.reduce((s, n) => s + n.bytes, 0)
      for (const node of await readdir(join(www, `v${v}`))) {
        for (const f of await readdir(join(www, `v${v}`, node))) {
          await uploadFile(s3, join(www, `v${v}`, node, f), { bucket: 'builds', key: `bench/v${v}/${node}/${f}` })
        }
      }
    }
    log(`built and uploaded ${2 * runs} versions of ${(buildBytes / 1e9).toFixed(2)} GB`)
    nginx = await Nginx.launch({ root: www })
    const rows: string[] = []
    const perSource: Record<'s3' | 'nginx', { seconds: number[]; cpuPerGb: number[] }> = {
      s3: { seconds: [], cpuPerGb: [] },
      nginx: { seconds: [], cpuPerGb: [] },
    }
    // Alternate the sources so that load on the machine falls on both alike.
    for (let v = 1; v <= 2 * runs; v++) {
      const source = v % 2 === 1 ? 's3' : 'nginx'
      const from = source === 's3' ? `s3://builds/bench/v${v}/` : new URL(`v${v}`, nginx.url).toString()
      const cpu0 = nodes.nodes.map(nodeCpuSeconds)
      const r = await pushStore({ cluster, store: 'bench', from, adminToken: TOKEN })
      if (r.status !== 'live') throw new Error(`push v${v} from ${source}: ${r.status}`)
      const cpu = nodes.nodes.map(nodeCpuSeconds).reduce((a, c, i) => a + c - cpu0[i]!, 0)
      const cpuPerGb = cpu / (buildBytes / 1e9)
      perSource[source].seconds.push(r.fetchSeconds)
      perSource[source].cpuPerGb.push(cpuPerGb)
      log(`push v${v} from ${source}: fetch ${r.fetchSeconds.toFixed(2)} s, node CPU ${cpu.toFixed(2)} s`)
      rows.push(
        `| ${v} | ${source} | ${r.fetchSeconds.toFixed(2)} | ${(buildBytes / 1e6 / r.fetchSeconds).toFixed(0)} | ${cpu.toFixed(2)} | ${cpuPerGb.toFixed(2)} |`,
      )
    }

    // Build: the same Parquet parts from S3 and from local disk.
    const bparts = join(dir, 'build-parts')
    await mkdir(bparts)
    const perPart = Math.ceil(buildRecords / 4)
    for (let p = 0; p < 4; p++) {
      await duckdb(
        `COPY (SELECT 'key-' || i AS key, md5(i::VARCHAR) || repeat('w', 68) AS value FROM range(${p * perPart}, ${Math.min(buildRecords, (p + 1) * perPart)}) t(i)) TO ${sqlString(join(bparts, `part-${p}.parquet`))} (FORMAT parquet)`,
      )
      await uploadFile(s3, join(bparts, `part-${p}.parquet`), { bucket: 'data', key: `parts/part-${p}.parquet` })
    }
    const buildRows: string[] = []
    const buildSeconds: Record<'s3' | 'local', number[]> = { s3: [], local: [] }
    for (let i = 0; i < runs; i++) {
      for (const where of ['s3', 'local'] as const) {
        const b = await buildStore({
          inputs: [where === 's3' ? 's3://data/parts/' : bparts],
          format: 'parquet',
          cluster,
          store: 'b',
          output: join(dir, `build-${where}-${i}`),
          version: 1,
        })
        buildSeconds[where].push(b.seconds)
        buildRows.push(
          `| ${i + 1} | ${where} | ${b.inputRecords} | ${(b.inputBytes / 1e6).toFixed(0)} | ${b.seconds.toFixed(2)} | ${Math.round(b.inputRecords / b.seconds)} |`,
        )
        await rm(join(dir, `build-${where}-${i}`), { recursive: true, force: true })
      }
    }
    const s3Push = median(perSource.s3.seconds)
    const ngPush = median(perSource.nginx.seconds)
    process.stdout.write(
      [
        `Push of a ${(buildBytes / 1e9).toFixed(2)} GB build (${records.toLocaleString('en-US')} records × ${valueBytes} B, replication 1) to 3 local nodes, alternately from the S3 test server (s3rver 4.0.4, a Node process storing objects as files, SigV4 checked; the nodes sign with their own credentials, 8 MiB ranges, 4 in flight per file) and from nginx serving the same files; ${runs} push(es) from each. Node CPU: user + system seconds of the 3 nodes (supervisors and workers) over the push.`,
        '',
        '| push | from | fetch s | aggregate MB/s | node CPU s | node CPU s per GB |',
        '|---:|---|---:|---:|---:|---:|',
        ...rows,
        `| **median** | s3 | **${s3Push.toFixed(2)}** | **${(buildBytes / 1e6 / s3Push).toFixed(0)}** | | **${median(perSource.s3.cpuPerGb).toFixed(2)}** |`,
        `| **median** | nginx | **${ngPush.toFixed(2)}** | **${(buildBytes / 1e6 / ngPush).toFixed(0)}** | | **${median(perSource.nginx.cpuPerGb).toFixed(2)}** |`,
        '',
        `Build of ${buildRecords.toLocaleString('en-US')} records from 4 Parquet parts (DuckDB, snappy) read from s3:// and from local disk, the default workers and memory; ${runs} run(s) each, alternated.`,
        '',
        '| run | input | records | input MB | build s | records/s |',
        '|---:|---|---:|---:|---:|---:|',
        ...buildRows,
        `| **median** | s3 | | | **${median(buildSeconds.s3).toFixed(2)}** | |`,
        `| **median** | local | | | **${median(buildSeconds.local).toFixed(2)}** | |`,
        '',
      ].join('\n'),
    )
  } finally {
    restore()
    s3.close()
    await nginx?.dispose()
    await nodes.killAll()
    await s3server.stop()
    await rm(dir, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`objstore-bench: ${err instanceof Error ? err.stack : String(err)}\n`)
  process.exit(1)
})
