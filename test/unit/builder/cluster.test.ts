import { clusterLayout, parseCluster, sameLayout } from '../../../cluster/cluster'
import { isStoreError } from '../../../common/errors'

const node = (id: number, partitions: number[], port = 7000 + id) => ({ id, host: '127.0.0.1', port, partitions })

function error(json: unknown): string {
  try {
    parseCluster(json, 'c.json')
  } catch (err) {
    expect(isStoreError(err, 'RO_BAD_CLUSTER')).toBe(true)
    return (err as Error).message
  }
  throw new Error('expected a validation error')
}

test('a valid cluster is parsed with nodes sorted by id', () => {
  const c = parseCluster({ name: 'x', nodes: [node(1, [1, 3]), node(0, [2, 0])] })
  expect(c.nodes.map((n) => n.id)).toEqual([0, 1])
  expect(c.nodes[0]!.partitions).toEqual([0, 2])
})

test('a node listed with no partitions is an address only: outside the layout, still in the node list', () => {
  const c = parseCluster({ name: 'x', nodes: [node(0, [0, 1]), node(2, []), node(1, [2])] })
  expect(c.nodes.map((n) => n.id)).toEqual([0, 1, 2])
  expect(clusterLayout(c)).toEqual([
    { id: 0, partitions: [0, 1] },
    { id: 1, partitions: [2] },
  ])
  expect(sameLayout(clusterLayout(c), clusterLayout(parseCluster({ name: 'y', nodes: [node(0, [0, 1]), node(1, [2])] })))).toBe(true)
})

test.each([
  ['duplicate partition', { name: 'x', nodes: [node(0, [0, 1]), node(1, [1])] }, /duplicate partition 1/],
  ['gap in partition ids', { name: 'x', nodes: [node(0, [0]), node(1, [2])] }, /partition 1 is missing/],
  [
    'node without a partitions array',
    { name: 'x', nodes: [node(0, [0]), { id: 1, host: 'h', port: 2 }] },
    /node 1: has no "partitions" array/,
  ],
  ['no node with partitions', { name: 'x', nodes: [node(0, []), node(1, [])] }, /no node has partitions/],
  ['bad port', { name: 'x', nodes: [node(0, [0], 70000)] }, /bad port 70000/],
  ['duplicate node id', { name: 'x', nodes: [node(0, [0]), { ...node(0, [1]), port: 7009 }] }, /duplicate node id 0/],
  ['same host and port', { name: 'x', nodes: [node(0, [0], 7000), node(1, [1], 7000)] }, /127.0.0.1:7000 is used by another node/],
  ['no name', { nodes: [node(0, [0])] }, /"name"/],
  ['no nodes', { name: 'x', nodes: [] }, /"nodes"/],
  ['negative partition', { name: 'x', nodes: [node(0, [-1])] }, /partition -1/],
])('%s is refused with a clear message', (_what, json, message) => {
  const m = error(json)
  expect(m).toMatch(/^c\.json: /)
  expect(m).toMatch(message)
})

test('layouts compare by ids and partitions, not hosts or ports', () => {
  const a = parseCluster({ name: 'x', nodes: [node(0, [0, 1]), node(1, [2, 3])] })
  const b = parseCluster({ name: 'x', nodes: [{ ...node(0, [1, 0]), host: 'other', port: 9 }, node(1, [3, 2])] })
  const c = parseCluster({ name: 'x', nodes: [node(0, [0, 2]), node(1, [1, 3])] })
  expect(sameLayout(a.nodes, b.nodes)).toBe(true)
  expect(sameLayout(a.nodes, c.nodes)).toBe(false)
})
