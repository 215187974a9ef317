import { buildRing, replicaTable } from '../../../cluster/routing'
import { layoutChangeOffers, partitionMoves, pushPeerOffers } from '../../../client/push/partition-sources'
import type { VersionManifest } from '../../../formats/store/layout/partition-files'

/** Layout of `owners` nodes dealing `partitions` round-robin. */
const layout = (owners: number, partitions = 12): { id: number; partitions: number[] }[] =>
  Array.from({ length: owners }, (_, id) => ({
    id,
    partitions: Array.from({ length: partitions }, (_, p) => p).filter((p) => p % owners === id),
  }))

const manifest = (owners: number, version = 1, replication = 2): VersionManifest =>
  ({ version, dataVersion: 1, layout: layout(owners), replication, partitions: 12 }) as unknown as VersionManifest

test('auto: a node takes from a peer exactly the partitions it holds as a later replica, each from that partition first replica', () => {
  const m = manifest(3)
  const replicas = replicaTable(buildRing(m.layout), 2)
  for (const id of [0, 1, 2]) {
    const offers = pushPeerOffers(m, id, 'auto')
    for (const o of offers) {
      expect(o.version).toBe(1)
      for (const p of o.partitions) expect(replicas[p]).toEqual([o.nodeId, id])
    }
    const fromPeers = offers.flatMap((o) => o.partitions).sort((a, b) => a - b)
    const later = replicas.flatMap((r, p) => (r[1] === id ? [p] : []))
    expect(fromPeers).toEqual(later)
  }
  // Each partition is read from the build output once: by its first replica only.
  const fromSource = [0, 1, 2].flatMap((id) => {
    const peers = new Set(pushPeerOffers(m, id, 'auto').flatMap((o) => o.partitions))
    return replicas.flatMap((r, p) => (r.includes(id) && !peers.has(p) ? [p] : []))
  })
  expect(fromSource.sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, p) => p))
  expect(pushPeerOffers(m, 1, 'source')).toEqual([])
})

test('a layout change: a node gains what it did not hold, offered by every node that held it, and loses what it no longer holds', () => {
  const before = manifest(3, 1)
  const after = { ...manifest(5, 2), dataVersion: 1 }
  const oldReplicas = replicaTable(buildRing(before.layout), 2)
  let gainedTotal = 0
  for (const id of [0, 1, 2, 3, 4]) {
    const m = partitionMoves(before, after, id)
    gainedTotal += m.gained.length
    const offers = layoutChangeOffers(after, before, id)
    for (const o of offers) {
      expect(o.version).toBe(1)
      for (const p of o.partitions) {
        expect(m.gained).toContain(p)
        expect(oldReplicas[p]).toContain(o.nodeId)
      }
    }
    // Every gained partition is offered by each of its old replicas.
    for (const p of m.gained)
      expect(
        offers
          .filter((o) => o.partitions.includes(p))
          .map((o) => o.nodeId)
          .sort(),
      ).toEqual([...oldReplicas[p]!].sort())
  }
  // New nodes gain everything they hold and lose nothing.
  expect(partitionMoves(before, after, 4).lost).toEqual([])
  expect(partitionMoves(before, after, 4).gained.length).toBeGreaterThan(0)
  expect(gainedTotal).toBeGreaterThan(0)
  // A layout compared with itself moves nothing.
  for (const id of [0, 1, 2]) expect(partitionMoves(before, before, id)).toEqual({ gained: [], lost: [] })
})
