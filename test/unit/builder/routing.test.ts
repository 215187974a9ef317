import { createKeyHasher } from '../../../formats/store/layout/key-hash'
import { buildRing, heldPartitionMask, heldPartitions, masterPartition, replicaNodes, routeHash } from '../../../cluster/routing'
import { chunkOf } from '../../../formats/store/layout/layout'

const layout = [
  { id: 0, partitions: [0, 3, 6] },
  { id: 1, partitions: [1, 4, 7] },
  { id: 2, partitions: [2, 5, 8] },
]

test('replicas are the owners of the following partitions, distinct, master first', () => {
  const ring = buildRing(layout)
  expect(replicaNodes(ring, 0, 2)).toEqual([0, 1])
  expect(replicaNodes(ring, 8, 2)).toEqual([2, 0])
  expect(replicaNodes(ring, 4, 3)).toEqual([1, 2, 0])
})

test('consecutive partitions on one node are skipped for distinct replicas', () => {
  const ring = buildRing([
    { id: 0, partitions: [0, 1] },
    { id: 1, partitions: [2, 3] },
  ])
  expect(replicaNodes(ring, 0, 2)).toEqual([0, 1])
  expect(replicaNodes(ring, 3, 2)).toEqual([1, 0])
})

test('replication above the node count is a RangeError', () => {
  expect(() => replicaNodes(buildRing(layout), 0, 4)).toThrow(RangeError)
})

test('known-answer vector: MD5("hello") routes by bytes 0-3 and chunks by bytes 4-7', async () => {
  const h = (await createKeyHasher()).hash(Buffer.from('hello'))
  expect(Buffer.from(h).toString('hex')).toBe('5d41402abc4b2a76b9719d911017c592')
  expect(masterPartition(h, 9)).toBe(0x5d41402a % 9)
  expect(chunkOf(h, 7)).toBe(0xbc4b2a76 % 7)
  expect(routeHash(buildRing(layout), h, 2)).toEqual(replicaNodes(buildRing(layout), 0x5d41402a % 9, 2))
})

test('1M random keys: every chunk of every node is within 5% of its mean', async () => {
  const hasher = await createKeyHasher()
  const ring = buildRing(layout)
  const chunks = 8
  const counts = Array.from({ length: 3 }, () => new Array<number>(chunks).fill(0))
  for (let i = 0; i < 1_000_000; i++) {
    const h = hasher.hash(Buffer.from(`key-${i * 2654435761}`))
    for (const n of routeHash(ring, h, 2)) counts[n]![chunkOf(h, chunks)]!++
  }
  for (const perNode of counts) {
    const mean = perNode.reduce((a, b) => a + b, 0) / chunks
    for (const c of perNode) expect(Math.abs(c - mean) / mean).toBeLessThan(0.05)
  }
  // Each key on exactly 2 nodes.
  expect(counts.flat().reduce((a, b) => a + b, 0)).toBe(2_000_000)
})

test('held partitions: every partition is held by exactly `replication` nodes, and mask and list agree', () => {
  const ring = buildRing(layout)
  for (const replication of [1, 2, 3]) {
    const holders = new Array<number>(ring.partitionCount).fill(0)
    for (const { id } of layout) {
      const mask = heldPartitionMask(ring, replication, id)
      const list = heldPartitions(ring, replication, id)
      expect(list).toEqual([...mask.keys()].filter((p) => mask[p] === 1))
      for (const p of list) holders[p]!++
      // A node always holds the partitions it masters.
      for (const p of layout[id]!.partitions) expect(mask[p]).toBe(1)
    }
    expect(holders).toEqual(new Array<number>(ring.partitionCount).fill(replication))
  }
  // At R=2 node 0 also holds the partitions whose next owner on the ring it is: 2, 5, 8.
  expect(heldPartitions(ring, 2, 0)).toEqual([0, 2, 3, 5, 6, 8])
})
