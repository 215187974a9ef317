import { parseCluster } from '../../../cluster/cluster'
import { buildPlan, formatPlan, type NodeState } from '../../../client/push/plan'
import { FORMAT_MAJOR, FORMAT_MINOR, type StoreMetadata } from '../../../formats/store/layout/metadata'

const layout = [
  { id: 0, partitions: [0, 2] },
  { id: 1, partitions: [1] },
]
/** The next layout: node 0 gives partition 2 to node 2 (new); node 3 leaves. */
const cluster = parseCluster({
  name: 'c',
  nodes: [
    { id: 0, host: 'h', port: 1, partitions: [0] },
    { id: 1, host: 'h', port: 2, partitions: [1] },
    { id: 2, host: 'h', port: 3, partitions: [2] },
    { id: 3, host: 'h', port: 4, partitions: [] },
    { id: 4, host: 'h', port: 5, partitions: [] },
  ],
})

function manifest(nodeId: number, sizes: number[]): StoreMetadata {
  return {
    format: 'rostore',
    formatMajor: FORMAT_MAJOR,
    formatMinor: FORMAT_MINOR,
    store: 's',
    version: 9,
    nodeId,
    clusterName: 'c',
    layout: [
      { id: 0, partitions: [0] },
      { id: 1, partitions: [1] },
      { id: 2, partitions: [2] },
    ],
    replication: 1,
    keyHash: 'md5',
    keySerializer: 'string',
    valueSerializer: 'string',
    compression: 'none',
    chunks: sizes.length,
    records: 1,
    chunkRecords: sizes.map(() => 1),
    checksumAlgorithm: 'xxh64',
    files: sizes.map((size, i) => ({ name: `${i}.data`, size, checksum: '0' })),
    build: {},
  }
}

const key = JSON.stringify(layout.map((n) => [n.id, n.partitions]))
const states = new Map<number, NodeState>([
  [0, { live: 8, holds: [8], partitions: [0, 2], layoutKey: key }],
  [1, { live: 8, holds: [8, 9], partitions: [1], layoutKey: key }],
  [2, { live: null, holds: [], partitions: [], layoutKey: undefined }],
  [3, { live: 8, holds: [8], partitions: [3], layoutKey: key }],
  [4, { live: null, holds: [], partitions: [], layoutKey: undefined, error: 'connection refused' }],
])

test('roles, partitions before and after, and bytes: nothing for a node holding the version or leaving', () => {
  const manifests = new Map([
    [0, manifest(0, [100, 20])],
    [1, manifest(1, [7])],
    [2, manifest(2, [50, 50, 1])],
  ])
  const plan = buildPlan(cluster, 's', '/b', { nodes: manifests }, states)
  expect(plan.version).toBe(9)
  expect(plan.layoutChange).toBe(true)
  expect(plan.nodes.map((n) => [n.nodeId, n.role, n.partitionsBefore, n.partitionsAfter, n.fetchBytes, n.files])).toEqual([
    [0, 'stays', [0, 2], [0], 120, 2],
    [1, 'stays', [1], [1], 0, 0],
    [2, 'joins', [], [2], 101, 3],
    [3, 'leaves', [3], [], 0, 0],
    [4, 'idle', [], [], 0, 0],
  ])
  const text = formatPlan(plan)
  expect(text).toContain('(a new cluster layout)')
  expect(text).toContain('node 0 (live 8): stays: partitions [0,2] -> [0], fetches 2 files, 120 bytes')
  expect(text).toContain('node 2 (live none): joins: partitions [] -> [2], fetches 3 files, 101 bytes')
  expect(text).toContain('node 3 (live 8): leaves the layout: fetches nothing, keeps version 8 as a backup after the swap')
  expect(text).toContain('[could not ask: connection refused]')
  expect(text).toContain('total: 221 bytes to fetch')
  expect(text).toContain(
    'before fetching, every reachable node would be handed the addresses of nodes 0, 1, 2, 3, 4 (POST /admin/cluster/nodes)',
  )
})

test('a push to the same layout is no layout change', () => {
  const same = parseCluster({
    name: 'c',
    nodes: layout.map((n) => ({ ...n, host: 'h', port: 10 + n.id })),
  })
  const m = { ...manifest(0, [1]), layout }
  const plan = buildPlan(
    same,
    's',
    '/b',
    {
      nodes: new Map([
        [0, m],
        [1, { ...m, nodeId: 1 }],
      ]),
    },
    new Map([...states].slice(0, 2)),
  )
  expect(plan.layoutChange).toBe(false)
  expect(plan.nodes.map((n) => n.role)).toEqual(['stays', 'stays'])
})
