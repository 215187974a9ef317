import { join } from 'node:path'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { makeTmp } from '../../../testkit/stores/tmp'
import { json, startCluster, type TestCluster } from '../../../testkit/cluster/node-process'

const TOKEN = 'cluster-helper-token-0123456789'

describe('testkit/cluster/node-process: a cluster of real nodes', () => {
  const tmp = makeTmp('rostore-cluster-')
  let cluster: TestCluster | undefined
  afterAll(async () => {
    await cluster?.killAll()
    tmp.cleanup()
  })

  test('three nodes listen where cluster.json says, each serves its own node directory', async () => {
    cluster = await startCluster({ dir: tmp.dir, nodes: 3, token: TOKEN })
    expect(cluster.nodes.map((n) => n.port)).toEqual(cluster.cluster.nodes.map((n) => n.port))
    for (const node of cluster.nodes) {
      const id = node.opts.nodeId
      const src = join(tmp.dir, `src-${id}`)
      await makeNodeDir(src, [['k', `node-${id}`]], { store: 'users', version: 1, nodeId: id, chunks: 1 })
      await node.install('users', src, { swap: true })
      expect((await node.request('/stores/users/keys/k')).body.toString()).toBe(`node-${id}`)
      expect(json(await node.request('/status'))['node']).toMatchObject({ id, cluster: 'test-cluster', port: node.port })
    }
    // A node refuses a version built for another node.
    const other = join(tmp.dir, 'src-1')
    const r = await cluster.nodes[0]!.admin('POST', '/stores/users/install', { path: other })
    expect(await cluster.nodes[0]!.waitJob(String(json(r)['id']))).toMatchObject({ state: 'failed', error: { code: 'RO_CONFLICT' } })

    // kill -9 one node, restart it on the same port: it serves the same version again.
    const n1 = cluster.nodes[1]!
    expect((await n1.kill9()).signal).toBe('SIGKILL')
    const again = await n1.restart()
    cluster.nodes[1] = again
    expect(again.port).toBe(n1.port)
    expect((await again.request('/stores/users/keys/k')).body.toString()).toBe('node-1')
    const exits = await Promise.all(cluster.nodes.map((n) => n.sigterm()))
    expect(exits.every((e) => e.code === 0)).toBe(true)
  })
})
