import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildStore } from '../builder/engines/local/build-job'
import { packageRoot } from '../common/paths'
import { pushStore } from '../client/push/push-store'
import { rollbackCluster } from '../client/push/rollback'
import { StoreClient } from '../client/store-client'
import { clusterVersions } from '../client/versions'
import { startLocalCluster, type LocalCluster } from './local-cluster'

/**
 * The README's main job, end to end on bundled sample data: a 3-node cluster on
 * loopback (replication 2), build v1, push, read, build and push v2, read, roll back,
 * read, stop. Every step prints what it did; any failure exits non-zero.
 */
export async function runQuickstart(opts: { keep?: boolean; log?: (line: string) => void } = {}): Promise<void> {
  const log = opts.log ?? ((l: string) => process.stdout.write(l + '\n'))
  const work = mkdtempSync(join(tmpdir(), 'rostore-quickstart-'))
  const sample = join(packageRoot(), 'examples', 'sample')
  const keys = ['user-1', 'user-42', 'user-1999', 'user-no-such']
  let local: LocalCluster | undefined
  try {
    log(`1. starting 3 nodes on loopback (work dir ${work})`)
    local = await startLocalCluster(work, 3, 3, randomBytes(16).toString('hex'))
    for (const n of local.cluster.nodes) log(`   node ${n.id} on ${n.host}:${n.port}, partitions ${n.partitions.join(',')}`)
    const { cluster, adminToken } = local

    const versions = [1, 2]
    for (const v of versions) {
      const input = join(sample, `recommendations-v${v}.jsonl`)
      log(`${v === 1 ? 2 : 4}. building version ${v} of store "recs" from ${input}`)
      const out = join(work, `build-v${v}`)
      const b = await buildStore({
        inputs: [input],
        format: 'jsonl',
        cluster,
        store: 'recs',
        output: out,
        replication: 2,
        version: v,
        compression: 'snappy',
      })
      log(`   ${b.inputRecords} records -> ${b.nodes.map((n) => `node ${n.nodeId}: ${n.records}`).join(', ')} (${b.seconds.toFixed(2)} s)`)
      log(`   pushing version ${v} to the cluster`)
      const p = await pushStore({
        cluster,
        store: 'recs',
        from: out,
        adminToken,
        onEvent: (e) => e.type === 'step' && log(`   push: ${e.message}`),
      })
      if (p.status !== 'live') throw new Error(`push of version ${v} ended ${p.status}: ${JSON.stringify(p.nodes)}`)
      log(`   version ${v} live on every node (fetch ${p.fetchSeconds.toFixed(2)} s, swap ${(p.swapSeconds * 1000).toFixed(1)} ms)`)
      await readKeys(v === 1 ? 3 : 5, `reading through the routing client (expect model "v${v}")`, `v${v}`)
    }

    log('6. rolling the whole cluster back')
    const r = await rollbackCluster({ cluster, store: 'recs', adminToken })
    log(`   every node back on version ${r.to}`)
    await readKeys(7, 'reading again (expect model "v1")', 'v1')
    for (const n of await clusterVersions(cluster, 'recs', adminToken)) {
      log(`   node ${n.nodeId}: live ${n.live}, holds ${n.versions.map((x) => x.version).join(', ')}`)
    }

    log('8. stopping the nodes')
    const codes = await local.stop()
    local = undefined
    if (codes.some((c) => c !== 0)) throw new Error(`a node exited with ${codes.join(', ')}`)
    log('   all nodes drained and exited 0. Done.')

    async function readKeys(step: number, what: string, model: string): Promise<void> {
      log(`${step}. ${what}`)
      const client = await StoreClient.connect({ cluster, store: 'recs' })
      try {
        const values = await client.getMany(keys)
        keys.forEach((k, i) => {
          const v = values[i]
          log(`   ${k} -> ${v === undefined ? '(not found)' : v.toString('utf8')}  [replicas: nodes ${client.replicasOf(k).join(', ')}]`)
          const got = v === undefined ? undefined : (client.decode(v) as { model?: string }).model
          if (k !== 'user-no-such' && got !== model) throw new Error(`${k}: expected model ${model}, got ${String(got)}`)
        })
      } finally {
        client.close()
      }
    }
  } finally {
    if (local) await local.stop()
    if (!opts.keep) rmSync(work, { recursive: true, force: true })
  }
}
