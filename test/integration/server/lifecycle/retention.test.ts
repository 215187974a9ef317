import { join } from 'node:path'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { json, startSingleNode, type NodeProcess } from '../../../../testkit/cluster/node-process'
import { makeVersions, STORE, storeEntries } from '../fixture'

const TOKEN = 'retention-token-0123456789'

async function settle(node: NodeProcess, dataDir: string, expected: string[]): Promise<string[]> {
  const end = Date.now() + 5000
  let got = storeEntries(dataDir)
  while (JSON.stringify(got) !== JSON.stringify(expected) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20))
    got = storeEntries(dataDir)
  }
  void node
  return got
}

describe('retention keeps exactly K backups (real node)', () => {
  const tmp = makeTmp('rostore-retention-')
  const nodes: NodeProcess[] = []
  let src: Record<number, string>
  beforeAll(async () => {
    src = await makeVersions(tmp.dir, [1, 2, 3, 4, 5, 6])
  })
  afterAll(async () => {
    await Promise.all(nodes.filter((n) => n.running).map((n) => n.kill9()))
    tmp.cleanup()
  })

  test.each([[2], [1], [0]])('--keep-versions %i', async (keep) => {
    const dataDir = join(tmp.dir, `data-k${keep}`)
    const node = await startSingleNode({ dir: tmp.dir, dataDir, token: TOKEN, keepVersions: keep })
    nodes.push(node)
    for (let v = 1; v <= 6; v++) {
      await node.install(STORE, src[v]!, { swap: true })
      const kept = Array.from({ length: Math.min(v, keep + 1) }, (_, i) => v - i).sort((a, b) => a - b)
      const expected = ['LIVE', ...kept.map((k) => `version-${k}`)].sort()
      expect(await settle(node, dataDir, expected)).toEqual(expected)
    }
    const status = json<{ stores: { version: number; backups: number[]; newer: number[] }[] }>(await node.request('/status'))
    expect(status.stores[0]).toMatchObject({ version: 6, backups: Array.from({ length: keep }, (_, i) => 6 - keep + i), newer: [] })
    const metrics = (await node.request('/metrics')).body.toString()
    expect(metrics).toContain(`rostore_versions_deleted_total{store="${STORE}"} ${6 - (keep + 1)}`)

    if (keep >= 1) {
      // Rollback keeps the rolled-back-from version (newer than live), so roll forward works.
      expect(json(await node.admin('POST', `/stores/${STORE}/rollback`))).toMatchObject({ from: 6, to: 5 })
      const kept = Array.from({ length: keep + 1 }, (_, i) => 6 - i).sort((a, b) => a - b)
      const expected = ['LIVE', ...kept.map((k) => `version-${k}`)].sort()
      expect(await settle(node, dataDir, expected)).toEqual(expected)
      expect(json(await node.admin('POST', `/stores/${STORE}/swap`, { version: 6 }))).toMatchObject({ from: 5, to: 6 })
    } else {
      const r = await node.admin('POST', `/stores/${STORE}/rollback`)
      expect(r.status).toBe(409)
      expect(json(r)).toMatchObject({ error: { code: 'RO_CONFLICT', message: expect.stringMatching(/no version older/) } })
    }
    expect((await node.sigterm()).code).toBe(0)
  })
})
