import { TARGET_CHUNK_BYTES, defaultChunkCount, defaultChunks, defaultPartitionChunkCount } from '../../../builder/chunk-count'
import { bucketCount, bucketPlan, bucketTarget, targetFileNames } from '../../../builder/bucket-plan'

test('format 2: chunks per partition from the input size and the partition count only, at least 1', () => {
  expect(defaultPartitionChunkCount(0, 12)).toBe(1)
  expect(defaultPartitionChunkCount(12 * TARGET_CHUNK_BYTES, 12)).toBe(1)
  expect(defaultPartitionChunkCount(12 * TARGET_CHUNK_BYTES + 1, 12)).toBe(2)
  // Replication and node count change format 1's count, never format 2's.
  for (const replication of [1, 2, 3])
    for (const nodes of [3, 5]) {
      expect(defaultChunks('partitions', 40 * TARGET_CHUNK_BYTES, replication, { nodes, partitions: 12 })).toBe(4)
    }
  expect(defaultChunks('nodes', 40 * TARGET_CHUNK_BYTES, 2, { nodes: 5, partitions: 12 })).toBe(
    defaultChunkCount(40 * TARGET_CHUNK_BYTES, 2, 5),
  )
  expect(defaultChunkCount(40 * TARGET_CHUNK_BYTES, 2, 5)).toBe(16)
})

test('buckets: (node position, chunk) in format 1, (partition, chunk) in format 2', () => {
  const layout = [
    { id: 7, partitions: [1, 3] },
    { id: 2, partitions: [0, 2, 4] },
  ]
  const nodes = bucketPlan('nodes', layout, 3)
  expect(bucketCount(nodes)).toBe(6)
  expect(bucketTarget(nodes, 4)).toEqual({ bucket: 4, chunk: 1, nodeId: 7, dir: 'node-7' })
  expect(targetFileNames(bucketTarget(nodes, 4))).toEqual({ index: '1.index', data: '1.data' })
  const parts = bucketPlan('partitions', layout, 3)
  expect(bucketCount(parts)).toBe(15)
  expect(bucketTarget(parts, 14)).toEqual({ bucket: 14, chunk: 2, partition: 4, dir: '' })
  expect(targetFileNames(bucketTarget(parts, 14))).toEqual({ index: 'p4-c2.index', data: 'p4-c2.data' })
})
