import { createHash } from 'node:crypto'
import { buildVersion, numberedRecords } from '../../testkit/cluster/build-version'
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, readSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { loadCluster, type Cluster } from '../../cluster/cluster'
import { pushStore } from '../../client/push/push-store'
import { StoreClient, type FailoverEvent } from '../../client/store-client'
import { json, startCluster, type TestCluster } from '../../testkit/cluster/node-process'
import { reportFigures } from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * A replica whose files are damaged answers 422 (RO_CORRUPT,
 * RO_CHECKSUM_MISMATCH, RO_BAD_FORMAT). The routing client takes that as its cue to ask
 * the next replica, for get and getMany, and counts it; the damaged node reports the
 * corrupt reads in /status. Before the fix `get` threw RO_CORRUPT although the other
 * replica held the right value, and `getMany` failed whole.
 *
 * Three nodes, replication 2; after the push, one byte in every 200 of node 0's live data
 * files is flipped in place (its open reader sees it at once).
 */

jest.setTimeout(120_000)
const tmp = makeTmp('rostore-corrupt-failover-')
const TOKEN = 'corrupt-failover-token-0123456'
const KEYS = 3000
const CODES = ['RO_CORRUPT', 'RO_CHECKSUM_MISMATCH', 'RO_BAD_FORMAT']
let nodes: TestCluster
let cluster: Cluster

const value = (i: number): string => `v1-${i}-${'p'.repeat(i % 50)}`

beforeAll(async () => {
  nodes = await startCluster({ dir: tmp.dir, nodes: 3, partitionsPerNode: 3, token: TOKEN })
  cluster = await loadCluster(nodes.clusterFile)
  const out = await buildVersion({ dir: tmp.dir, cluster, version: 1, records: numberedRecords(KEYS, value), output: join(tmp.dir, 'out') })
  expect((await pushStore({ cluster, store: 'st', from: out, adminToken: TOKEN })).status).toBe('live')
})

afterAll(async () => {
  await nodes?.killAll()
  tmp.cleanup()
})

/** Flips one byte in every `every` bytes past the 64-byte header of each data file. */
function damageDataFiles(dir: string, every: number): number {
  let flipped = 0
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.data'))) {
    const fd = openSync(join(dir, name), 'r+')
    try {
      const size = fstatSync(fd).size
      const b = Buffer.alloc(1)
      for (let at = 64 + 37; at < size; at += every) {
        readSync(fd, b, 0, 1, at)
        b[0] = b[0]! ^ 0x5a
        writeSync(fd, b, 0, 1, at)
        flipped++
      }
    } finally {
      closeSync(fd)
    }
  }
  return flipped
}

test('reads fail over from a replica with damaged files; the client counts it, the node reports it', async () => {
  const flipped = damageDataFiles(join(tmp.dir, 'data-0', 'st', 'version-1'), 200)
  const events: FailoverEvent[] = []
  const client = await StoreClient.connect({ cluster, store: 'st', onFailover: (e) => events.push(e) })
  try {
    const keys = Array.from({ length: KEYS }, (_, i) => `key-${i}`)
    const many = await client.getMany(keys)
    const wrongMany = keys.filter((_k, i) => many[i]?.toString() !== value(i))
    const onNode0First = keys.map((k, i) => ({ k, i })).filter(({ k }) => client.replicasOf(k)[0] === 0)
    const wrongGets: string[] = []
    for (const { k, i } of onNode0First) if ((await client.get(k))?.toString() !== value(i)) wrongGets.push(k)
    expect(await client.get('absent-key')).toBeUndefined()
    const stats = client.stats()

    const status = await Promise.all(nodes.nodes.map(async (n) => json<{ stores: Record<string, unknown>[] }>(await n.request('/status'))))
    const corrupt = status.map(
      (s) => s.stores[0]?.['corruptReads'] as { count: number; lastCode: string; lastAt: string; lastVersion: number } | null,
    )
    reportFigures(
      'corrupt-failover',
      `${flipped} bytes flipped in node 0's data files: ${KEYS} keys by getMany and ${onNode0First.length} by get (node 0 asked first), ` +
        `${wrongMany.length + wrongGets.length} wrong; the client failed over ${stats.failovers} times, ${stats.corruptAnswers} on corrupt answers; ` +
        `node 0 /status corruptReads ${JSON.stringify(corrupt[0])}`,
      { flipped, keys: KEYS, gets: onNode0First.length, wrong: wrongMany.length + wrongGets.length, stats, corrupt },
    )
    expect(wrongMany).toEqual([])
    expect(wrongGets).toEqual([])
    expect(stats.corruptAnswers).toBeGreaterThan(0)
    expect(Object.keys(stats.corruptByNode)).toEqual(['0'])
    expect(events.filter((e) => CODES.includes(e.code)).every((e) => e.nodeId === 0)).toBe(true)
    expect(corrupt[0]).toMatchObject({
      count: expect.any(Number),
      lastCode: expect.stringMatching(/^RO_(CORRUPT|CHECKSUM_MISMATCH|BAD_FORMAT)$/),
      lastVersion: 1,
    })
    expect(corrupt[0]!.count).toBeGreaterThanOrEqual(stats.corruptAnswers)
    expect(Number.isNaN(Date.parse(corrupt[0]!.lastAt))).toBe(false)
    expect(corrupt.slice(1)).toEqual([null, null])
  } finally {
    client.close()
  }
})

/** Flips the last byte of the hash prefix of `key`'s index entry in the node directory `dir`; whether it was found. */
function damageIndexEntry(dir: string, key: string): boolean {
  const prefix = createHash('md5').update(key).digest().subarray(0, 8)
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.index'))) {
    const bytes = readFileSync(join(dir, name))
    for (let at = 64; at + 16 <= bytes.length; at += 16) {
      if (!bytes.subarray(at, at + 8).equals(prefix)) continue
      const fd = openSync(join(dir, name), 'r+')
      writeSync(fd, Buffer.from([(bytes[at + 7] as number) ^ 0x01]), 0, 1, at + 7)
      closeSync(fd)
      return true
    }
  }
  return false
}

test('an index damaged while live: its keys are answered "corrupt" (422), never "absent"; the client reads the replica', async () => {
  const node1 = nodes.nodes[1]!
  const client = await StoreClient.connect({ cluster, store: 'st' })
  try {
    const victims = Array.from({ length: KEYS }, (_, i) => i)
      .filter((i) => client.replicasOf(`key-${i}`)[0] === 1)
      .slice(0, 3)
    expect(victims).toHaveLength(3)
    for (const i of victims) expect(damageIndexEntry(join(tmp.dir, 'data-1', 'st', 'version-1'), `key-${i}`)).toBe(true)
    for (const i of victims) {
      const r = await node1.request(`/stores/st/keys/key-${i}`)
      expect(r.status).toBe(422)
      expect(json<{ error: { code: string } }>(r).error.code).toBe('RO_CORRUPT')
      expect((await client.get(`key-${i}`))?.toString()).toBe(value(i))
    }
    const many = await client.getMany(victims.map((i) => `key-${i}`))
    expect(many.map((v) => v?.toString())).toEqual(victims.map(value))
    const status = json<{ stores: Record<string, unknown>[] }>(await node1.request('/status'))
    expect((status.stores[0]?.['corruptReads'] as { count: number } | null)?.count).toBeGreaterThanOrEqual(3)
  } finally {
    client.close()
  }
})
