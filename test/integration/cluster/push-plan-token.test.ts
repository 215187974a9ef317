import { execFile } from 'node:child_process'
import { buildVersion, numberedRecords } from '../../../testkit/cluster/build-version'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { pushStore } from '../../../client/push/push-store'
import { planPush } from '../../../client/push/plan'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { cliPath } from '../../../common/paths'
import { startCluster, type TestCluster } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The push plan on nodes that require a read token: the plan reads each node's live layout
 * from a read route, so it must send the read token, and a layout it could not read is
 * reported as such, never taken for "no partitions" (a plan that then hides a layout
 * change).
 */
jest.setTimeout(120_000)
const tmp = makeTmp()
const ADMIN = 'plan-token-admin-0123456789'
const READ = 'plan-token-read-0123456789'
let nodes: TestCluster
let cluster: Cluster

function build(v: number): Promise<string> {
  return buildVersion({
    dir: tmp.dir,
    cluster,
    version: v,
    records: numberedRecords(300, (i) => `v${v}-${i}`),
    output: join(tmp.dir, `v${v}`),
    chunks: 1,
  })
}

beforeAll(async () => {
  nodes = await startCluster({ dir: tmp.dir, nodes: 2, token: ADMIN, env: { ROSTORE_READ_TOKEN: READ } })
  cluster = await loadCluster(nodes.clusterFile)
  const v1 = await build(1)
  expect((await pushStore({ cluster, store: 'st', from: v1, adminToken: ADMIN, readToken: READ })).status).toBe('live')
})
afterAll(async () => {
  await nodes?.killAll()
  tmp.cleanup()
})

test('with the read token the plan shows each node its live partitions; without it, says it could not read them', async () => {
  const v2 = await build(2)
  const plan = await planPush({ cluster, store: 'st', from: v2, adminToken: ADMIN, readToken: READ })
  expect(plan.layoutChange).toBe(false)
  for (const n of plan.nodes) {
    expect(n.error).toBeUndefined()
    expect(n.role).toBe('stays')
    expect(n.partitionsBefore.length).toBeGreaterThan(0)
    expect(n.partitionsBefore).toEqual(n.partitionsAfter)
  }
  const blind = await planPush({ cluster, store: 'st', from: v2, adminToken: ADMIN })
  for (const n of blind.nodes)
    expect(n.error).toMatch(/cannot read its live layout: .*RO_UNAUTHORIZED|cannot read its live layout: .*401|token/i)
})

test('rostore push --dry-run sends ROSTORE_READ_TOKEN, and prints the partitions', async () => {
  const v2 = join(tmp.dir, 'v2')
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [cliPath(), 'push', '--cluster', nodes.clusterFile, '--store', 'st', '--from', v2, '--dry-run'],
    { env: { ...process.env, ROSTORE_ADMIN_TOKEN: ADMIN, ROSTORE_READ_TOKEN: READ } },
  )
  expect(stdout).not.toMatch(/could not ask/)
  expect(stdout).not.toMatch(/partitions \[\] ->/)
  expect(stdout).toMatch(/stays/)
})
