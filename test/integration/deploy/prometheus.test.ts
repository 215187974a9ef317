import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../../../common/paths'
import { startCluster, type TestCluster } from '../../../testkit/cluster/node-process'
import { Prometheus, prometheusAvailable, promtool } from '../../../testkit/peers/prometheus'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The shipped Prometheus rules (deploy/prometheus/): promtool checks them and runs their
 * unit tests, and a real Prometheus scraping a real 3-node cluster with them fires
 * RostoreNodeDown when a node is killed and clears it when the node is back.
 */
jest.setTimeout(240_000)
const RULES_DIR = join(packageRoot(__dirname), 'deploy', 'prometheus')
const RULES = join(RULES_DIR, 'rostore-rules.yml')
const tmp = makeTmp('rostore-prometheus-')
let cluster: TestCluster | undefined
let prom: Prometheus | undefined

beforeAll(() => {
  if (!prometheusAvailable()) throw new Error('prometheus and promtool are needed (apt-get install -y prometheus; npm test installs it)')
})

afterAll(async () => {
  await prom?.stop()
  await cluster?.killAll()
  tmp.cleanup()
})

test('promtool check rules accepts the rules file', () => {
  const r = promtool(['check', 'rules', RULES], RULES_DIR)
  expect(r.output).toContain('SUCCESS')
  expect(r.code).toBe(0)
})

test('promtool test rules: every alert fires on its series and not on healthy ones', () => {
  const r = promtool(['test', 'rules', 'rostore-rules.test.yml'], RULES_DIR)
  expect(r.output).toContain('SUCCESS')
  expect(r.code).toBe(0)
})

test('a real Prometheus fires RostoreNodeDown for a killed node and clears it when the node is back', async () => {
  // The nodes' /metrics is closed with a metrics token, which Prometheus sends (docs/DEPLOY.md).
  const tokenFile = join(tmp.dir, 'metrics-token')
  writeFileSync(tokenFile, 'prometheus-metrics-token-0123456789\n')
  cluster = await startCluster({ dir: tmp.dir, nodes: 3, extraArgs: ['--workers', '1', '--metrics-token-file', tokenFile] })
  const instances = cluster.nodes.map((n) => `127.0.0.1:${n.port}`)
  expect((await cluster.nodes[0]!.request('/metrics')).status).toBe(401)
  prom = await Prometheus.launch({ dir: join(tmp.dir, 'prometheus'), targets: instances, ruleFiles: [RULES], credentialsFile: tokenFile })
  const p = prom
  await p.until(async () => Object.values(await p.targetHealth()).filter((h) => h === 'up').length === 3, 30_000, 'three targets up')
  const nodeDown = async (state?: string): Promise<string[]> =>
    (await p.alerts())
      .filter((a) => a.labels['alertname'] === 'RostoreNodeDown' && (state === undefined || a.state === state))
      .map((a) => a.labels['instance'] as string)
  expect(await nodeDown()).toEqual([])
  // The recording rules run on the scraped series (here: the data directories' free share).
  type Vector = { result: { metric: { instance: string }; value: [number, string] }[] }
  const free = async (): Promise<Vector['result']> => (await p.api<Vector>('/api/v1/query?query=rostore%3Adata_dir_free%3Aratio')).result
  await p.until(async () => (await free()).length === 3, 30_000, 'rostore:data_dir_free:ratio for every node')
  expect((await free()).map((s) => s.metric.instance).sort()).toEqual([...instances].sort())
  for (const s of await free()) expect(Number(s.value[1])).toBeGreaterThan(0)

  const victim = cluster.nodes[1]!
  await victim.kill9()
  await p.until(async () => (await nodeDown()).length > 0, 30_000, 'RostoreNodeDown pending')
  expect(await nodeDown()).toEqual([instances[1]])
  // The rule's `for: 1m`: pending first, firing a minute later.
  await p.until(async () => (await nodeDown('firing')).length > 0, 120_000, 'RostoreNodeDown firing')
  expect(await nodeDown('firing')).toEqual([instances[1]])

  cluster.nodes[1] = await victim.restart()
  await p.until(async () => (await nodeDown()).length === 0, 60_000, 'RostoreNodeDown cleared')
  expect((await p.targetHealth())[instances[1]!]).toBe('up')
})
